// SPDX-License-Identifier: Apache-2.0
// The command's warnings (see warnings.hpp).
#include "cli/warnings.hpp"

#include "cli/help_page.hpp"
#include "cli/process_start.hpp"

#include <opencv2/core.hpp>

#include <cuconv/error.hpp>

#include <unistd.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace cuconv::cli {

double saturated_fraction(const cv::Mat& image) {
  if (image.empty()) return 0.0;
  double low = 0.0;
  double high = 0.0;
  switch (image.depth()) {
    case CV_8U:
      high = 255;
      break;
    case CV_16U:
      high = 65535;
      break;
    case CV_16S:
      low = -32768;
      high = 32767;
      break;
    default:
      return 0.0;  // float results hold any value
  }
  const cv::Mat values = image.reshape(1);
  const auto at_limit = static_cast<double>(cv::countNonZero(values == low) + cv::countNonZero(values == high));
  return at_limit / static_cast<double>(values.total());
}

std::optional<std::string> unnormalized_filter_warning(const Filter& filter, const cv::Mat& result) {
  if (!sums_to_neither_zero_nor_one(filter)) return std::nullopt;
  const double saturated = saturated_fraction(result);
  if (saturated <= 0.5) return std::nullopt;
  char sum[32];
  std::snprintf(sum, sizeof sum, "%g", weight_sum(filter));
  return "the filter's weights (" + filter.origin + ") sum to " + sum + ", not 1, and " +
         std::to_string(static_cast<int>(saturated * 100.0)) +
         "% of the output values are clipped at the type's limits; --normalize divides the weights by their sum";
}

bool no_gpu_warning_wanted(const char* variable_value) {
  return variable_value == nullptr || std::string_view(variable_value) != "1";
}

std::string no_gpu_warning(std::string_view reason) {
  // One line of at most kHelpWidth columns as printed ("cuconv: warning: ..."): the reason up to
  // its first ';' (what follows is advice), shortened with "..." where it would not fit.
  constexpr std::string_view kPrinted = "cuconv: warning: ";
  const std::string head = "no GPU (";
  const std::string tail = "), CPU used; " + std::string(kNoGpuWarningVariable) + "=1 hides this";
  std::string why(reason.substr(0, reason.find(';')));
  const std::size_t room = kHelpWidth - kPrinted.size() - head.size() - tail.size();
  if (why.size() > room) why = why.substr(0, room - 3) + "...";
  return head + why + tail;
}

std::optional<std::string> no_gpu_warning_once(std::string_view reason) {
  static std::atomic<bool> given{false};
  if (given.exchange(true)) return std::nullopt;
  return no_gpu_warning(reason);
}

namespace {

constexpr std::string_view kMarkerPrefix = "no-gpu-warned-";

/// "SID-START": session `sid` and its leader's start time (clock ticks since boot; 0 when the
/// leader has gone).
std::string key_of(long sid) {
  const std::optional<unsigned long long> ticks = process_start_ticks(sid);
  return std::to_string(sid) + "-" + (ticks ? std::to_string(*ticks) : std::string("0"));
}

}  // namespace

std::string session_key(long pid) {
  const pid_t sid = ::getsid(static_cast<pid_t>(pid));
  if (pid <= 0 || sid <= 0) return {};
  return key_of(sid);
}

bool first_in_session(engine::Files& files, const std::string& folder, const std::string& key) {
  const std::string marker = folder + "/" + std::string(kMarkerPrefix) + key;
  try {
    if (files.kind(marker, false) != engine::FileKind::none) return false;
    if (!files.write_output(marker, {}, false)) return false;  // another call of the session was first
    // The markers of ended sessions go, so the folder holds one per live session.
    for (const std::string& name : files.list_directory(folder)) {
      if (!name.starts_with(kMarkerPrefix)) continue;
      const std::string other = name.substr(kMarkerPrefix.size());
      const long sid = std::atol(other.c_str());
      if (sid > 0 && other != key_of(sid)) files.remove(std::string(folder).append("/").append(name));
    }
  } catch (const std::exception&) {
    return true;
  }
  return true;
}

}  // namespace cuconv::cli
