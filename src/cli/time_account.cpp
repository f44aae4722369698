// SPDX-License-Identifier: Apache-2.0
// -v's account of a single-image command's time (see time_account.hpp).
#include "cli/time_account.hpp"

#include "cli/process_start.hpp"
#include "common/library_loads.hpp"

#include <fmt/format.h>

#include <thread>

namespace cuconv::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// One part of the total: a name and its milliseconds.
struct Part {
  std::string name;
  double ms = 0;
};

/// "NAME 1.2 + NAME 3.4 ...".
std::string joined(const std::vector<Part>& parts) {
  std::string text;
  for (const Part& part : parts) text += fmt::format("{}{} {:.1f}", text.empty() ? "" : " + ", part.name, part.ms);
  return text;
}

/// The loads as `-v` lists them, "NAME N.N ms" each, comma-separated; "none" for no loads.
std::string load_list(const std::vector<common::LibraryLoad>& loads) {
  std::string text;
  for (const common::LibraryLoad& load : loads)
    text += fmt::format("{}{} {:.1f} ms", text.empty() ? "" : ", ", load.name, load.ms);
  return text.empty() ? "none" : text;
}

}  // namespace

std::vector<std::string> time_account(const Session& session, const engine::ImageTimes& times, const TimeMarks& marks) {
  const Clock::time_point now = Clock::now();
  const std::thread::id self = std::this_thread::get_id();
  // This command's loads (on its thread, since it started) are parts of its time; a server's
  // earlier loads were paid before the command; loads on the process's other threads (the GPU
  // codec's set-up) ran beside the parts, so they are named but not added (served, those threads
  // may be other clients').
  std::vector<common::LibraryLoad> ours;
  std::vector<common::LibraryLoad> earlier;
  std::vector<common::LibraryLoad> beside;
  for (common::LibraryLoad& load : common::library_loads()) {
    if (load.start < session.started)
      earlier.push_back(std::move(load));
    else if (load.thread == self)
      ours.push_back(std::move(load));
    else if (!session.served)
      beside.push_back(std::move(load));
  }
  double loads_ms = 0;
  for (const common::LibraryLoad& load : ours) loads_ms += load.ms;

  std::vector<std::string> lines;
  std::vector<Part> parts;
  const char* from = session.served ? "the client started" : "the process started";
  Clock::time_point origin = session.started;
  if (const auto process_start = session.process_id > 0 ? process_started(session.process_id) : std::nullopt) {
    origin = *process_start;
    const double startup_ms = ms_between(origin, session.started);
    parts.push_back({session.served ? "client start-up" : "start-up", startup_ms});
    lines.push_back(session.served ? fmt::format("start-up: the client's {:.1f} ms from its start to this command in "
                                                 "the server (its start from /proc/PID/stat, to 10 ms)",
                                                 startup_ms)
                                   : fmt::format("start-up: {:.1f} ms from the process's start to main: the front "
                                                 "end, its server check, the engine's exec and its shared libraries "
                                                 "(start from /proc/self/stat, to 10 ms)",
                                                 startup_ms));
  } else {
    from = "main";
    lines.emplace_back("start-up: the process's start time is unknown (no /proc); times count from main");
  }
  if (session.served)
    lines.push_back("libraries already loaded in the server: " + load_list(earlier) +
                    (ours.empty() ? std::string() : "; loaded for this command: " + load_list(ours)));
  else
    lines.push_back("libraries loaded on first use: " + load_list(ours) +
                    (beside.empty() ? std::string() : "; beside the stages, on another thread: " + load_list(beside)));
  if (loads_ms > 0) parts.push_back({"libraries", loads_ms});
  // The command's set-up: options, the filter, the output's checks, the GPU check.
  parts.push_back({"set-up", ms_between(session.started, marks.image_started) -
                                 common::library_load_ms(session.started, marks.image_started)});
  // A single image's own GPU codec pipeline: the set-up the command waited for (the CUDA context,
  // nvJPEG's handle and states; docs/gpu-jpeg.md) and its shut-down, outside the stages.
  if (times.codec_setup_ms > 0) parts.push_back({"GPU codec set-up", times.codec_setup_ms});
  parts.push_back({"read and decode", times.read_ms});
  parts.push_back({"filter", times.filter_stage_ms});
  if (marks.inspect_ms > 0) parts.push_back({"compare/bench", marks.inspect_ms});
  parts.push_back({"encode", times.encode_ms});
  parts.push_back({"write", marks.deliver_ms});
  if (times.codec_shutdown_ms > 0) parts.push_back({"GPU codec shut-down", times.codec_shutdown_ms});
  const double total_ms = ms_between(origin, now);
  double accounted_ms = 0;
  for (const Part& part : parts) accounted_ms += part.ms;
  lines.push_back(fmt::format("time since {}: {:.1f} ms = {}; unaccounted {:.1f} ms", from, total_ms, joined(parts),
                              total_ms - accounted_ms));
  return lines;
}

}  // namespace cuconv::cli
