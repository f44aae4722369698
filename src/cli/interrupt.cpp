// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM/SIGHUP recorded by an async-signal-safe handler (one lock-free atomic store).
#include "cli/interrupt.hpp"

#include "cli/library_messages.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>
#include <iterator>

namespace cuconv::cli {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free store");

struct sigaction g_previous[std::size(kSignals)];
bool g_installed[std::size(kSignals)] = {};

extern "C" void record_signal(int signal) {
  int none = 0;
  g_received.compare_exchange_strong(none, signal);  // keep the first
}

// RemoveOnSignal's state, read by its handler: the path in a fixed buffer (no allocation in a
// handler), published by the atomic length (0: nothing to remove).
char g_remove_path[PATH_MAX + 1] = {};
std::atomic<std::size_t> g_remove_length{0};
static_assert(std::atomic<std::size_t>::is_always_lock_free, "the signal handler needs a lock-free load");
char g_remove_line[256] = {};  // the line printed on a signal, made when the guard starts
std::size_t g_remove_line_length = 0;
// The real standard error: descriptor 2 may be the image libraries' capture pipe, whose reader
// thread would not relay the line before the process ends.
int g_remove_message_fd = STDERR_FILENO;
struct sigaction g_remove_previous[std::size(kSignals)];
bool g_remove_installed[std::size(kSignals)] = {};

/// Async-signal-safe: unlink, write and _exit only.
extern "C" void remove_and_exit(int signal) {
  if (g_remove_length.load() != 0) (void)::unlink(g_remove_path);
  char line[sizeof g_remove_line + 64];  // the prefix, the signal's name and the line
  std::size_t length = 0;
  const char* name = signal_name(signal);
  for (const char* p = "cuconv: warning: interrupted by "; *p != '\0';) line[length++] = *p++;
  for (const char* p = name; *p != '\0';) line[length++] = *p++;
  for (std::size_t i = 0; i < g_remove_line_length; ++i) line[length++] = g_remove_line[i];
  (void)!::write(g_remove_message_fd, line, length);
  ::_exit(128 + signal);
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const char* what) {
  const std::string line = std::string(" while ") + what + "; nothing was written\n";
  g_remove_message_fd = ::fileno(terminal_stderr());
  g_remove_line_length = std::min(line.size(), sizeof g_remove_line);
  std::memcpy(g_remove_line, line.data(), g_remove_line_length);
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = remove_and_exit;
    ::sigemptyset(&action.sa_mask);
    for (const int other : kSignals) ::sigaddset(&action.sa_mask, other);  // one handler at a time
    g_remove_installed[i] = ::sigaction(kSignals[i], &action, &g_remove_previous[i]) == 0;
  }
}

RemoveOnSignal::~RemoveOnSignal() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i)
    if (g_remove_installed[i]) (void)::sigaction(kSignals[i], &g_remove_previous[i], nullptr);
  for (bool& installed : g_remove_installed) installed = false;
  g_remove_length.store(0);
}

void RemoveOnSignal::remove_on_signal(const std::string& path) noexcept {
  g_remove_length.store(0);  // the handler reads no half-copied path
  if (path.empty() || path.size() > PATH_MAX) return;
  std::memcpy(g_remove_path, path.c_str(), path.size() + 1);
  g_remove_length.store(path.size());
}

void ignore_file_size_signal() noexcept { (void)std::signal(SIGXFSZ, SIG_IGN); }

InterruptGuard::InterruptGuard() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = record_signal;
    ::sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // reads and writes in other threads go on rather than fail with EINTR
    g_installed[i] = ::sigaction(kSignals[i], &action, &g_previous[i]) == 0;
  }
}

InterruptGuard::~InterruptGuard() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i)
    if (g_installed[i]) (void)::sigaction(kSignals[i], &g_previous[i], nullptr);
  for (bool& installed : g_installed) installed = false;
}

int received_signal() noexcept { return g_received.load(); }

const char* signal_name(int signal) noexcept {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

ExitCode interrupted_exit_code(int signal) noexcept { return static_cast<ExitCode>(128 + signal); }

}  // namespace cuconv::cli
