// SPDX-License-Identifier: Apache-2.0
#pragma once
// When a process started, from /proc: the no-GPU warning's session key (warnings.hpp) and -v's
// time account (time_account.hpp) ask it of this process or of a served command's client.
#include <chrono>
#include <optional>

namespace cuconv::cli {

/// Process `pid`'s start time: field 22 of /proc/PID/stat, in clock ticks since boot; nullopt
/// when it cannot be read (gone, or outside this process's pid namespace).
[[nodiscard]] std::optional<unsigned long long> process_start_ticks(long pid);

/// When process `pid` started, on the steady clock: process_start_ticks read against
/// CLOCK_BOOTTIME now, so to one clock tick (1/sysconf(_SC_CLK_TCK) s; the kernel
/// rounds down, so the process is up to a tick younger); nullopt when it cannot be read.
[[nodiscard]] std::optional<std::chrono::steady_clock::time_point> process_started(long pid);

}  // namespace cuconv::cli
