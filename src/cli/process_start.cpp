// SPDX-License-Identifier: Apache-2.0
// A process's start time from /proc (see process_start.hpp).
#include "cli/process_start.hpp"

#include <unistd.h>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace cuconv::cli {

std::optional<unsigned long long> process_start_ticks(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The fields after the name, which may hold spaces and ')', follow its last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int number = 3; number <= 22 && fields >> field; ++number) {
  }
  if (!fields || field.empty() || field.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(field);
}

std::optional<std::chrono::steady_clock::time_point> process_started(long pid) {
  const std::optional<unsigned long long> ticks = process_start_ticks(pid);
  const long per_second = ::sysconf(_SC_CLK_TCK);
  timespec boot{};
  if (!ticks || per_second <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  const double since_boot_ms = static_cast<double>(boot.tv_sec) * 1e3 + static_cast<double>(boot.tv_nsec) / 1e6;
  const double age_ms = since_boot_ms - static_cast<double>(*ticks) * 1e3 / static_cast<double>(per_second);
  return now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double, std::milli>(age_ms));
}

}  // namespace cuconv::cli
