// SPDX-License-Identifier: Apache-2.0
// SignalGuard (see signal_guard.hpp): an async-signal-safe handler records the signal and writes
// one byte to a pipe the client's wait polls.
#include "serve/signal_guard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace cuconv::serve {

namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile int g_signal_pipe = -1;  // write end: the handler wakes the channel's wait through it

extern "C" void note_signal(int signal) {
  g_signal = signal;
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe, &byte, 1);
  errno = saved;
}

}  // namespace

SignalGuard::SignalGuard() {
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0) {
    read_.reset(ends[0]);
    write_.reset(ends[1]);
  }
  g_signal = 0;
  g_signal_pipe = write_.get();
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  // A signal ignored when the client started (nohup, a background job of a non-interactive
  // shell) stays ignored, as it does for a command in a process of its own.
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    installed_[i] = ::sigaction(kSignals[i], &action, &old_[i]) == 0;
  }
}

SignalGuard::~SignalGuard() {
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    if (installed_[i]) ::sigaction(kSignals[i], &old_[i], nullptr);
  g_signal_pipe = -1;
}

void SignalGuard::rearm() const noexcept {
  for (char bytes[64]; ::read(read_.get(), bytes, sizeof bytes) > 0;) continue;
}

int SignalGuard::caught() noexcept { return static_cast<int>(g_signal); }

}  // namespace cuconv::serve
