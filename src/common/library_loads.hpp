// SPDX-License-Identifier: Apache-2.0
#pragma once
// Libraries a process loads on first use (OpenCV's image codec module, nvJPEG, the CUDA driver),
// each timed at the one place it is loaded, so a stage that happened to pay for a load can leave
// it out and `-v` can say where a command's start-up went. Header only: the loaders live in
// libraries of their own (the lazy OpenCV codec module's loader among them), and the one record
// is this header's inline function's.
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cuconv::common {

using LoadClock = std::chrono::steady_clock;

/// One library's load (or start, for the CUDA driver): what, when, on which thread, how long.
struct LibraryLoad {
  std::string name;
  LoadClock::time_point start;
  double ms = 0;
  std::thread::id thread;
};

namespace library_loads_detail {

struct Record {
  std::mutex mutex;
  std::vector<LibraryLoad> loads;
};

inline Record& record() {
  static Record loads;  // one per process: the inline function's static is shared by every caller
  return loads;
}

}  // namespace library_loads_detail

/// Times a load from construction to destruction and records it then (also when the load
/// throws: the time was spent). Construct it just before the load, at the one place it happens.
class TimedLoad {
 public:
  explicit TimedLoad(std::string name) : name_(std::move(name)), start_(LoadClock::now()) {}
  ~TimedLoad() {
    const double ms = std::chrono::duration<double, std::milli>(LoadClock::now() - start_).count();
    try {
      library_loads_detail::Record& r = library_loads_detail::record();
      const std::lock_guard lock(r.mutex);
      r.loads.push_back({std::move(name_), start_, ms, std::this_thread::get_id()});
    } catch (...) {
      // Out of memory: the load goes unrecorded and -v shows its time as unaccounted.
    }
  }
  TimedLoad(const TimedLoad&) = delete;
  TimedLoad& operator=(const TimedLoad&) = delete;

 private:
  std::string name_;
  LoadClock::time_point start_;
};

/// Every load recorded in this process so far, in the order they finished.
[[nodiscard]] inline std::vector<LibraryLoad> library_loads() {
  library_loads_detail::Record& r = library_loads_detail::record();
  const std::lock_guard lock(r.mutex);
  return r.loads;
}

/// The milliseconds of the loads this thread began in [from, to): the share of a stage timed over
/// that span that went to loading libraries, which the stage's own time leaves out.
[[nodiscard]] inline double library_load_ms(LoadClock::time_point from, LoadClock::time_point to) {
  library_loads_detail::Record& r = library_loads_detail::record();
  const std::lock_guard lock(r.mutex);
  double ms = 0;
  for (const LibraryLoad& load : r.loads)
    if (load.thread == std::this_thread::get_id() && load.start >= from && load.start < to) ms += load.ms;
  return ms;
}

/// The milliseconds from `from` to now less this thread's loads in between (library_load_ms).
[[nodiscard]] inline double ms_without_loads(LoadClock::time_point from) {
  const LoadClock::time_point now = LoadClock::now();
  return std::chrono::duration<double, std::milli>(now - from).count() - library_load_ms(from, now);
}

}  // namespace cuconv::common
