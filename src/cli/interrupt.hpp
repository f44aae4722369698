#pragma once
// SIGINT and SIGTERM while cuconv writes: the handler only records the signal, so that writes in
// flight finish (no `.cuconv-tmp-*` file is left behind) and the caller stops at its next step,
// says what was done, and exits 128 + the signal number (130 for SIGINT, 143 for SIGTERM).
#include <cuconv/error.hpp>

namespace cuconv::cli {

/// While alive, SIGINT and SIGTERM set a flag instead of ending the process; the previous
/// handlers come back when it ends. A signal that was ignored when the process started (a
/// background job of a non-interactive shell, nohup) stays ignored. One at a time.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

/// The signal received while an InterruptGuard was alive (the first one), or 0.
[[nodiscard]] int received_signal() noexcept;

/// "SIGINT", "SIGTERM".
[[nodiscard]] const char* signal_name(int signal) noexcept;

/// The exit code after `signal`: 128 + its number, as a shell reports a process it ended.
[[nodiscard]] ExitCode interrupted_exit_code(int signal) noexcept;

}  // namespace cuconv::cli
