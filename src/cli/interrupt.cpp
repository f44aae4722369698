// SIGINT/SIGTERM recorded by an async-signal-safe handler (one lock-free atomic store).
#include "cli/interrupt.hpp"

#include <atomic>
#include <csignal>
#include <iterator>

namespace cuconv::cli {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};

std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free store");

struct sigaction g_previous[std::size(kSignals)];
bool g_installed[std::size(kSignals)] = {};

extern "C" void record_signal(int signal) {
  int none = 0;
  g_received.compare_exchange_strong(none, signal);  // keep the first
}

}  // namespace

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
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

ExitCode interrupted_exit_code(int signal) noexcept { return static_cast<ExitCode>(128 + signal); }

}  // namespace cuconv::cli
