// SPDX-License-Identifier: Apache-2.0
#pragma once
// SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) while cuconv writes: the handler
// only records the signal, so that writes in flight finish and the caller stops at its next step,
// says what was done, and exits 128 + the signal number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
#include <cuconv/error.hpp>

#include <string>

namespace cuconv::cli {

/// While alive, SIGINT, SIGTERM and SIGHUP set a flag instead of ending the process; the previous
/// handlers come back when it ends. A signal that was ignored when the process started (a
/// background job of a non-interactive shell, nohup) stays ignored. One at a time.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

/// While alive, SIGINT, SIGTERM and SIGHUP remove the file named with remove_on_signal (if any) and end
/// the process at once with 128 + the signal number, after one line on standard error: for work
/// that holds a temporary file and cannot stop at a step of its own (a blocking read of standard
/// input). An InterruptGuard made while one is alive takes precedence until it ends. A signal
/// ignored when the process started stays ignored. One at a time.
class RemoveOnSignal {
 public:
  /// `what` ("reading standard input") goes into the line printed on a signal.
  explicit RemoveOnSignal(const char* what);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

  /// The file a signal removes from now on (replacing any before); an empty path: none. Paths
  /// longer than PATH_MAX are not kept (the signal then removes nothing).
  void remove_on_signal(const std::string& path) noexcept;
};

/// Makes SIGXFSZ (a write beyond the file size limit, `ulimit -f`) ignored, so that the write
/// fails with EFBIG and takes the write-error path (message, temporary file removed, exit 4)
/// instead of the signal ending the process with a partial temporary file left. Call once, at
/// the start of main.
void ignore_file_size_signal() noexcept;

/// The signal received while an InterruptGuard was alive (the first one), or 0.
[[nodiscard]] int received_signal() noexcept;

/// "SIGINT", "SIGTERM", "SIGHUP"; async-signal-safe.
[[nodiscard]] const char* signal_name(int signal) noexcept;

/// The exit code after `signal`: 128 + its number, as a shell reports a process it ended.
[[nodiscard]] ExitCode interrupted_exit_code(int signal) noexcept;

}  // namespace cuconv::cli
