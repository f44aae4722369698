// SPDX-License-Identifier: Apache-2.0
// `cuconv serve`'s listening loop and per-connection threads (see server.hpp).
//
// One thread accepts. It refuses other users at once and gives each admitted client a thread of
// its own (serve_connection, server_connection.cpp), which reads the Hello (within its deadline),
// answers status and stop requests, and takes one of max_clients' places for a command or waits
// in line for one (told so with Queued).
// The accepting thread also pings the clients without ever waiting on one, drops a client that
// leaves its bytes unread too long, and watches the stop signals, the idle clock and the
// server's own executable.
#include "serve/server.hpp"

#include "serve/server_state.hpp"

#include "serve/build_identity.hpp"
#include "serve/listen_socket.hpp"
#include "serve/socket_path.hpp"

#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

namespace cuconv::serve {

namespace {

/// Where the server listens: the sockets it was given, those systemd passed, or its own socket
/// bound at `where` (then `lock` holds its lock and `own_socket` its identity). `error` says why
/// its own could not be bound.
struct Listeners {
  std::vector<int> fds;
  bool activated = false;  ///< given or passed by systemd: not its own
  UniqueFd own_listener, lock;
  SocketPath where;
  struct stat own_socket {};
  std::string error;
};

Listeners open_listeners(const ServerOptions& options) {
  Listeners l;
  l.fds = options.listen_fds;
  if (l.fds.empty()) l.fds = systemd_listen_fds();
  l.activated = !l.fds.empty();
  l.where = options.socket_path.empty() ? default_socket_path() : explicit_socket_path(options.socket_path);
  if (!l.activated) {
    l.own_listener = bind_socket(l.where, l.lock, l.error);
    if (!l.own_listener) return l;
    ::stat(l.where.path.c_str(), &l.own_socket);
    l.fds.push_back(l.own_listener.get());
  }
  return l;
}

/// Pings every live client without waiting (the caller holds state.mutex): a client whose socket
/// buffer is full misses them, and one that leaves bytes unread for stall_ms is dropped (its
/// connection shut: its command stops as on a hang-up). Nothing here blocks.
void ping_clients(ServerState& state, const ServerOptions& options, int log_fd) {
  const auto now = clock_type::now();
  for (auto& [channel, watch] : state.live) {
    if (watch.dropped) continue;
    int unread = 0;
    if (::ioctl(channel->fd(), SIOCOUTQ, &unread) != 0) unread = 0;
    if (unread <= 0) {
      watch.unread_since.reset();
    } else if (!watch.unread_since) {
      watch.unread_since = now;
    } else if (now - *watch.unread_since >= std::chrono::milliseconds(options.stall_ms)) {
      watch.dropped = true;
      ::shutdown(channel->fd(), SHUT_RDWR);
      log_line(log_fd, "a client left " + std::to_string(unread) + " bytes unread for " +
                           seconds_text(now - *watch.unread_since) + " (stopped?): dropped as gone");
      continue;
    }
    (void)channel->try_send(Ping{});
  }
}

/// Admits one connection accepted on `listener`: another user's is refused, one past
/// `max_connections` told the server is busy, any other served on a thread of its own.
void accept_client(int listener, const ServerInfo& info, const std::shared_ptr<ServerState>& state,
                   std::size_t max_connections, int log_fd) {
  const ServerOptions& options = info.options;
  UniqueFd connection(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!connection) return;
  // Accepted sockets inherit nothing from the listener's O_NONBLOCK on Linux: blocking I/O
  // for the connection's own thread; what this thread sends never waits.
  if (options.socket_buffer_bytes > 0) {
    ::setsockopt(connection.get(), SOL_SOCKET, SO_SNDBUF, &options.socket_buffer_bytes, sizeof(int));
  }
  const PeerCredentials peer = peer_credentials(connection.get());
  if (peer.uid != static_cast<long>(::getuid())) {
    Channel refusal(std::move(connection));
    (void)refusal.try_send(Refused{
        RefusalReason::other_user,
        "cuconv serve: this server belongs to uid " + std::to_string(::getuid()) + "; uid " + std::to_string(peer.uid) +
            " may not use it (each user runs their own: unset CUCONV_SOCKET or point it at yours)"});
    log_line(log_fd, "refused pid " + std::to_string(peer.pid) + ": uid " + std::to_string(peer.uid) +
                         " is not the server's user");
    return;
  }
  std::unique_lock lock_state(state->mutex);
  if (state->connections >= max_connections) {
    lock_state.unlock();
    Channel refusal(std::move(connection));
    (void)refusal.try_send(
        Refused{RefusalReason::busy, "cuconv serve: " + std::to_string(max_connections) + " connections open"});
    return;
  }
  ++state->connections;
  lock_state.unlock();
  std::thread(
      [state, &info](UniqueFd socket, PeerCredentials peer_of) {
        serve_connection(std::move(socket), peer_of, info, *state);
        std::lock_guard lock_end(state->mutex);
        --state->connections;
        state->changed.notify_all();
      },
      std::move(connection), peer)
      .detach();
}

/// The accepting thread's timed duties: pings when due, the watch on the server's own executable
/// (a replaced one, an upgrade, makes the server exit when idle) and the idle clock.
class Duties {
 public:
  Duties(const ServerOptions& options, int log_fd)
      : options_(options), log_fd_(log_fd), executable_identity_(file_identity(options.executable)) {}

  /// Pings the clients when a ping is due (the caller holds state.mutex).
  void ping_if_due(ServerState& state) {
    if (options_.ping_interval_ms > 0 && clock_type::now() >= next_ping_) {
      ping_clients(state, options_, log_fd_);
      next_ping_ = clock_type::now() + std::chrono::milliseconds(options_.ping_interval_ms);
    }
  }

  /// Under state.mutex: pings when due; then why the server stops now, or nullopt and in
  /// `wait_ms` how long the accepting thread may wait for a connection (-1: no limit).
  std::optional<std::string> why_stop(ServerState& state, int& wait_ms) {
    ping_if_due(state);
    if (!state.stop_asked.empty()) return state.stop_asked;
    const bool idle = state.active == 0 && state.queue.empty();
    if (!options_.executable.empty() && clock_type::now() >= next_look_) {
      if (!state.executable_replaced && replaced()) {
        state.executable_replaced = true;
        log_line(log_fd_, options_.executable + " was replaced (an upgrade?): exiting once idle");
      }
      next_look_ = clock_type::now() + std::chrono::seconds(1);
    }
    if (idle && state.executable_replaced) return "its executable was replaced";
    if (idle && !state.exit_when_idle.empty()) return state.exit_when_idle;
    if (options_.idle_exit_seconds > 0 && idle && state.connections == 0) {
      const auto deadline = state.last_activity + std::chrono::seconds(options_.idle_exit_seconds);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
      if (left <= 0) return "idle for " + std::to_string(options_.idle_exit_seconds) + " s";
      wait_ms = static_cast<int>(std::min<long long>(left, 60'000)) + 1;
    } else if (options_.idle_exit_seconds > 0 || !state.exit_when_idle.empty()) {
      wait_ms = 1000;  // a client may finish: look at the idle clock again soon after
    }
    if (!options_.executable.empty()) wait_ms = wait_ms < 0 ? 1000 : std::min(wait_ms, 1000);
    return std::nullopt;
  }

  /// `wait_ms` shortened to the next ping.
  [[nodiscard]] int until_ping(int wait_ms) const {
    if (options_.ping_interval_ms <= 0) return wait_ms;
    const auto to_ping = std::chrono::duration_cast<std::chrono::milliseconds>(next_ping_ - clock_type::now()).count();
    const int ping_wait = static_cast<int>(std::max<long long>(to_ping, 0)) + 1;
    return wait_ms < 0 ? ping_wait : std::min(wait_ms, ping_wait);
  }

 private:
  /// Whether the executable at options.executable is no longer the one that started.
  [[nodiscard]] bool replaced() const {
    if (options_.executable.empty()) return false;
    const std::string now = own_executable();
    return now.ends_with(" (deleted)") || file_identity(options_.executable) != executable_identity_;
  }

  const ServerOptions& options_;
  int log_fd_;
  std::string executable_identity_;  ///< the executable as it was at start
  clock_type::time_point next_look_ = clock_type::now();
  clock_type::time_point next_ping_ = clock_type::now() + std::chrono::milliseconds(options_.ping_interval_ms);
};

/// Accepts connections until the server must stop, and says why: a duty's reason, a stop signal
/// read from `signals`, options.stop_fd, or a failed poll.
std::string accept_until_stopped(const std::vector<int>& listeners, const UniqueFd& signals, const ServerInfo& info,
                                 const std::shared_ptr<ServerState>& state, Duties& duties, int log_fd) {
  const ServerOptions& options = info.options;
  const std::size_t max_connections = std::size_t{std::max(options.max_clients, 1U)} + options.max_waiting + 16;
  for (;;) {
    int wait_ms = -1;
    {
      std::unique_lock lock_state(state->mutex);
      if (auto why = duties.why_stop(*state, wait_ms)) return *why;
    }
    wait_ms = duties.until_ping(wait_ms);
    std::vector<pollfd> polls;
    for (int fd : listeners) polls.push_back({fd, POLLIN, 0});
    polls.push_back({state->wake_read.get(), POLLIN, 0});
    if (signals) polls.push_back({signals.get(), POLLIN, 0});
    if (options.stop_fd >= 0) polls.push_back({options.stop_fd, POLLIN, 0});
    const int ready = ::poll(polls.data(), polls.size(), wait_ms);
    if (ready < 0 && errno != EINTR) return std::string("poll: ") + std::strerror(errno);
    if (ready <= 0) continue;
    std::size_t at = listeners.size();
    if (polls[at++].revents != 0) {
      for (char bytes[64]; ::read(state->wake_read.get(), bytes, sizeof bytes) > 0;) continue;
    }
    if (signals) {
      if (polls[at].revents != 0) {
        signalfd_siginfo signal_info{};
        if (::read(signals.get(), &signal_info, sizeof signal_info) == static_cast<ssize_t>(sizeof signal_info)) {
          return signal_info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
        }
      }
      ++at;
    }
    if (options.stop_fd >= 0 && polls[at].revents != 0) return "asked to stop";
    for (std::size_t i = 0; i < listeners.size(); ++i)
      if ((polls[i].revents & POLLIN) != 0) accept_client(listeners[i], info, state, max_connections, log_fd);
  }
}

/// Stops listening: closes its own listener and removes its socket, unless another server's
/// socket has taken the path since.
void stop_listening(Listeners& listen) {
  listen.own_listener.reset();
  if (listen.activated) return;
  struct stat now {};
  if (::stat(listen.where.path.c_str(), &now) == 0 && now.st_ino == listen.own_socket.st_ino &&
      now.st_dev == listen.own_socket.st_dev) {
    ::unlink(listen.where.path.c_str());
  }
}

/// Tells the waiting clients the server stops (they run in-process) and finishes the requests
/// in flight, pinging their clients; a second stop signal ends the server at once.
void drain(ServerState& state, const UniqueFd& signals, Duties& duties, const std::string& why_stopped, int log_fd) {
  std::unique_lock lock_state(state.mutex);
  state.stopping = true;
  state.changed.notify_all();
  log_line(log_fd, "stopping (" + why_stopped + "); " + std::to_string(state.active) + " request(s) in flight");
  while (state.connections > 0) {
    duties.ping_if_due(state);  // the drain may be long
    if (signals) {
      // A second signal while draining ends the server at once (its clients fail with exit 5).
      lock_state.unlock();
      pollfd p{signals.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        log_line(log_fd, "second signal: exiting without waiting for the requests in flight");
        std::_Exit(1);
      }
      lock_state.lock();
    } else {
      state.changed.wait_for(lock_state, std::chrono::milliseconds(100));
    }
  }
}

}  // namespace

namespace {

/// SIGTERM and SIGINT: the signals that drain the server.
sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void block_stop_signals() {
  const sigset_t set = stop_signal_set();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int run_server(const ServerOptions& given, const Handler& handler) {
  ServerOptions options = given;
  if (options.build.empty()) options.build = build_description();
  const int log_fd = options.log_fd;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);

  Listeners listen = open_listeners(options);
  if (!listen.error.empty()) {
    log_line(log_fd, listen.error);
    return static_cast<int>(ExitCode::not_started);
  }
  // Nothing depends on the server's folder any more (paths are the clients'; the socket's path
  // is absolute): holding it would keep a caller's folder busy for the server's life.
  if (options.leave_working_folder && ::chdir("/") != 0)
    log_line(log_fd, std::string("chdir /: ") + std::strerror(errno));
  for (int fd : listen.fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  sigset_t stop_signals = stop_signal_set();
  sigset_t old_mask;
  UniqueFd signals;
  if (options.handle_signals) {
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
    signals.reset(::signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  }

  const std::string socket_text =
      listen.activated ? std::to_string(listen.fds.size()) + " socket(s) from systemd" : listen.where.path;
  log_line(
      log_fd,
      "pid " + std::to_string(::getpid()) + " (" + options.build + ") listening on " + socket_text + "; idle exit " +
          (options.idle_exit_seconds == 0 ? std::string("never") : std::to_string(options.idle_exit_seconds) + " s") +
          ", " + std::to_string(options.max_clients) + " clients at once");

  auto state = std::make_shared<ServerState>();
  if (int ends[2]; ::pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0) {
    state->wake_read.reset(ends[0]);
    state->wake_write.reset(ends[1]);
  }
  const ServerInfo info{options, handler, socket_text};
  Duties duties(options, log_fd);
  const std::string why_stopped = accept_until_stopped(listen.fds, signals, info, state, duties, log_fd);

  stop_listening(listen);
  drain(*state, signals, duties, why_stopped, log_fd);
  if (options.handle_signals) ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  log_line(log_fd, "stopped");
  std::lock_guard lock_end(state->mutex);
  state->stop_waiters.clear();  // `serve --stop` sees its connection end: the server has stopped
  return 0;
}

}  // namespace cuconv::serve
