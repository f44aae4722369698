// SPDX-License-Identifier: Apache-2.0
// The served client's interruptions: SIGINT, SIGTERM and SIGHUP caught for the length of a
// request, so the served command hears of them through the client.
#pragma once

#include "serve/channel.hpp"

#include <signal.h>

#include <array>

namespace cuconv::serve {

/// Catches SIGINT, SIGTERM and SIGHUP (those not ignored) while it lives, restoring the caller's
/// handlers afterwards; read_fd() becomes readable when one arrives. One at a time per process.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  [[nodiscard]] int read_fd() const noexcept { return read_.get(); }
  /// Empties the pipe, so that the next signal wakes the channel's wait again.
  void rearm() const noexcept;
  /// The last signal caught since a guard was made, or 0.
  [[nodiscard]] static int caught() noexcept;

 private:
  UniqueFd read_, write_;
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
  std::array<bool, 3> installed_{};
};

}  // namespace cuconv::serve
