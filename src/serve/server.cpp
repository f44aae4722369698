// SPDX-License-Identifier: Apache-2.0
// `cuconv serve`'s listening loop and per-connection threads (see server.hpp).
//
// One thread accepts. It refuses other users at once, gives each admitted client a thread while
// fewer than max_clients run, and queues the rest (told so with Queued) for the threads to take
// when their client is done. It also watches the stop signals and the idle clock.
#include "serve/server.hpp"

#include "serve/socket_path.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <memory>
#include <set>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace cuconv::serve {

namespace {

using clock_type = std::chrono::steady_clock;

void log_line(int fd, const std::string& text) {
  const std::string line = "cuconv serve: " + text + "\n";
  // One write per line, so lines of concurrent requests never interleave.
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
}

/// `text` with control characters shown as '?': one request stays one log line.
std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

std::string describe_argv(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& arg : argv) {
    if (!text.empty()) text += ' ';
    const bool quote = arg.empty() || arg.find_first_of(" \t\n'\"") != std::string::npos;
    if (quote) text += '\'';
    text += printable(arg);
    if (quote) text += '\'';
    if (text.size() > 400) return text.substr(0, 400) + "...";
  }
  return text;
}

/// What the accepting thread and the connection threads share; threads hold it by shared_ptr so
/// the last one out may outlive run_server's frame.
struct State {
  std::mutex mutex;
  std::condition_variable changed;
  unsigned active = 0;                 // connection threads running
  std::deque<UniqueFd> waiting;        // admitted clients without a thread yet
  bool stopping = false;
  clock_type::time_point last_activity = clock_type::now();
  std::set<Channel*> live;             // connections past Welcome, pinged while they run
};

/// Keeps `channel` in state.live for its scope.
class LiveChannel {
 public:
  LiveChannel(State& state, Channel& channel) : state_(state), channel_(channel) {
    std::lock_guard lock(state_.mutex);
    state_.live.insert(&channel_);
  }
  ~LiveChannel() {
    std::lock_guard lock(state_.mutex);
    state_.live.erase(&channel_);
  }
  LiveChannel(const LiveChannel&) = delete;
  LiveChannel& operator=(const LiveChannel&) = delete;

 private:
  State& state_;
  Channel& channel_;
};

/// One client from Hello to Exit.
void serve_connection(UniqueFd socket, const PeerCredentials& peer, const Handler& handler, int log_fd, State& state,
                      unsigned ping_interval_ms) {
  Channel channel(std::move(socket));
  const LiveChannel live(state, channel);
  Received hello = channel.receive(10'000);
  if (hello.status != Received::Status::message || !std::holds_alternative<Hello>(hello.message)) {
    if (hello.status == Received::Status::bad) {
      (void)channel.send(Refused{RefusalReason::bad_message, "cuconv serve: " + hello.error});
      log_line(log_fd, "pid " + std::to_string(peer.pid) + ": refused: " + hello.error);
    }
    return;
  }
  const Hello& h = std::get<Hello>(hello.message);
  if (h.magic != kProtocolMagic || h.version != kProtocolVersion) {
    (void)channel.send(Refused{RefusalReason::version,
                               "cuconv serve: this server speaks protocol version " + std::to_string(kProtocolVersion) +
                                   ", the client " + std::to_string(h.version) +
                                   " (a server from another cuconv release is running: restart it)"});
    log_line(log_fd, "pid " + std::to_string(peer.pid) + ": refused: protocol version " + std::to_string(h.version));
    return;
  }
  if (!channel.send(Welcome{kProtocolVersion, static_cast<std::uint32_t>(::getpid()), ping_interval_ms})) return;

  Received request = channel.receive(10'000);
  if (request.status != Received::Status::message || !std::holds_alternative<Request>(request.message)) {
    if (request.status == Received::Status::bad || request.status == Received::Status::message) {
      const std::string why = request.error.empty() ? "expected a request" : request.error;
      (void)channel.send(Refused{RefusalReason::bad_message, "cuconv serve: " + why});
      log_line(log_fd, "pid " + std::to_string(peer.pid) + ": refused: " + why);
    }
    return;
  }
  Request& asked = std::get<Request>(request.message);
  ClientRequest client{std::move(asked.argv), std::move(asked.cwd), std::move(asked.environment),
                       asked.file_size_limit, asked.err_is_terminal, peer.pid, peer.uid};
  UniqueFd in = channel.take_fd(), out = channel.take_fd(), err = channel.take_fd();
  channel.drop_fds();
  if (!in || !out || !err || client.argv.empty()) {
    (void)channel.send(Refused{RefusalReason::bad_message, "cuconv serve: a request needs argv and descriptors 0, 1 and 2"});
    return;
  }

  const auto start = clock_type::now();
  int code = 1;
  {
    ClientSession session(channel, std::move(in), std::move(out), std::move(err), client.file_size_limit);
    try {
      code = handler(client, session);
    } catch (const std::exception& e) {
      const std::string text = "cuconv: internal error in the server: " + std::string(e.what()) + "\n";
      [[maybe_unused]] const ssize_t n = ::write(session.err_fd(), text.data(), text.size());
    } catch (...) {
      const std::string text = "cuconv: internal error in the server\n";
      [[maybe_unused]] const ssize_t n = ::write(session.err_fd(), text.data(), text.size());
    }
  }  // the client's descriptors close before it learns the exit code, so its pipes see their end
  const bool told = channel.send(Exit{code});
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f ms", ms);
  log_line(log_fd, "pid " + std::to_string(peer.pid) + " [" + printable(client.cwd) + "] " + describe_argv(client.argv) +
                       " -> exit " + std::to_string(code) + " in " + took + (told ? "" : " (the client had gone)"));
}

/// Binds and listens on `path`; the lock file beside it keeps a second server off the socket.
/// Returns the listening socket or an empty UniqueFd with `error` set.
UniqueFd bind_socket(const SocketPath& where, UniqueFd& lock, std::string& error) {
  if (!where.from_environment) {
    error = prepare_private_folder(where.folder);
    if (!error.empty()) return {};
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (where.path.size() >= sizeof address.sun_path) {
    error = where.path + ": the socket path is longer than " + std::to_string(sizeof address.sun_path - 1) + " bytes";
    return {};
  }
  std::memcpy(address.sun_path, where.path.c_str(), where.path.size() + 1);
  const std::string lock_path = where.path + ".lock";
  lock.reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) {
    error = lock_path + ": " + std::strerror(errno);
    return {};
  }
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    error = where.path + ": another cuconv serve is already running on this socket";
    return {};
  }
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) {
    error = std::string("socket: ") + std::strerror(errno);
    return {};
  }
  // A socket that still answers belongs to a server without our lock: one started by systemd's
  // cuconv.socket (the socket is systemd's). Only a dead socket is replaced.
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (probe && ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    error = where.path + ": something already listens there (systemd's cuconv.socket?); not replacing it";
    return {};
  }
  probe.reset();
  ::unlink(where.path.c_str());  // a socket left by a server that died
  const mode_t old_mask = ::umask(077);
  const int bound = ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0) {
    error = where.path + ": cannot bind: " + std::strerror(bind_errno);
    return {};
  }
  if (::listen(listener.get(), SOMAXCONN) != 0) {
    error = where.path + ": cannot listen: " + std::strerror(errno);
    return {};
  }
  return listener;
}

}  // namespace

std::vector<int> systemd_listen_fds() {
  // sd_listen_fds(3): descriptors 3 .. 3+LISTEN_FDS-1 are ours when LISTEN_PID is this process.
  constexpr int kFirst = 3;
  std::vector<int> fds;
  const char* pid_text = std::getenv("LISTEN_PID");
  const char* count_text = std::getenv("LISTEN_FDS");
  if (pid_text != nullptr && count_text != nullptr) {
    char* end = nullptr;
    const long pid = std::strtol(pid_text, &end, 10);
    const bool pid_ok = end != pid_text && *end == '\0' && pid == ::getpid();
    const long count = std::strtol(count_text, &end, 10);
    const bool count_ok = end != count_text && *end == '\0' && count > 0 && count < 1024;
    if (pid_ok && count_ok) {
      for (int fd = kFirst; fd < kFirst + count; ++fd) {
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        fds.push_back(fd);
      }
    }
  }
  ::unsetenv("LISTEN_PID");  // children (none planned) must not take the sockets for theirs
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  return fds;
}

int run_server(const ServerOptions& options, const Handler& handler) {
  const int log_fd = options.log_fd;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);

  // Listening sockets: given, passed by systemd, or our own.
  std::vector<int> listeners = options.listen_fds;
  if (listeners.empty()) listeners = systemd_listen_fds();
  const bool activated = !listeners.empty();
  UniqueFd own_listener, lock;
  SocketPath where = options.socket_path.empty() ? default_socket_path() : explicit_socket_path(options.socket_path);
  struct stat own_socket {};
  if (!activated) {
    std::string error;
    own_listener = bind_socket(where, lock, error);
    if (!own_listener) {
      log_line(log_fd, error);
      return 1;
    }
    ::stat(where.path.c_str(), &own_socket);
    listeners.push_back(own_listener.get());
  }
  for (int fd : listeners) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  UniqueFd signals;
  if (options.handle_signals) {
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
    signals.reset(::signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  }

  log_line(log_fd, "pid " + std::to_string(::getpid()) + " listening on " +
                       (activated ? std::to_string(listeners.size()) + " socket(s) from systemd" : where.path) +
                       "; idle exit " +
                       (options.idle_exit_seconds == 0 ? std::string("never") : std::to_string(options.idle_exit_seconds) + " s") +
                       ", " + std::to_string(options.max_clients) + " clients at once");

  auto state = std::make_shared<State>();
  const unsigned max_clients = options.max_clients == 0 ? 1 : options.max_clients;
  auto start_thread = [&](UniqueFd socket, PeerCredentials peer) {
    std::thread([state, &handler, log_fd, ping = options.ping_interval_ms](UniqueFd connection, PeerCredentials who) {
      for (;;) {
        serve_connection(std::move(connection), who, handler, log_fd, *state, ping);
        std::lock_guard lock_state(state->mutex);
        state->last_activity = clock_type::now();
        if (!state->waiting.empty() && !state->stopping) {
          connection = std::move(state->waiting.front());
          state->waiting.pop_front();
          who = peer_credentials(connection.get());
          continue;
        }
        --state->active;
        state->changed.notify_all();
        return;
      }
    }, std::move(socket), peer).detach();
  };

  auto next_ping = clock_type::now() + std::chrono::milliseconds(options.ping_interval_ms);
  const std::string why_stopped = [&]() -> std::string {
    for (;;) {
      if (options.ping_interval_ms > 0 && clock_type::now() >= next_ping) {
        // A Ping is 5 bytes into a socket buffer the client keeps reading: it does not block.
        std::lock_guard lock_state(state->mutex);
        for (Channel* channel : state->live) (void)channel->send(Ping{});
        static const std::vector<std::uint8_t> ping = encode(Ping{});
        for (const UniqueFd& waiting : state->waiting) {  // nothing else is sent on these yet
          (void)::send(waiting.get(), ping.data(), ping.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        next_ping = clock_type::now() + std::chrono::milliseconds(options.ping_interval_ms);
      }
      std::vector<pollfd> polls;
      for (int fd : listeners) polls.push_back({fd, POLLIN, 0});
      if (signals) polls.push_back({signals.get(), POLLIN, 0});
      if (options.stop_fd >= 0) polls.push_back({options.stop_fd, POLLIN, 0});
      int wait_ms = -1;
      if (options.idle_exit_seconds > 0) {
        std::lock_guard lock_state(state->mutex);
        if (state->active == 0 && state->waiting.empty()) {
          const auto deadline = state->last_activity + std::chrono::seconds(options.idle_exit_seconds);
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
          if (left <= 0) return "idle for " + std::to_string(options.idle_exit_seconds) + " s";
          wait_ms = static_cast<int>(std::min<long long>(left, 60'000)) + 1;
        } else {
          wait_ms = 1000;  // a client may finish: look at the idle clock again soon after
        }
      }
      if (options.ping_interval_ms > 0) {
        const auto to_ping = std::chrono::duration_cast<std::chrono::milliseconds>(next_ping - clock_type::now()).count();
        const int ping_wait = static_cast<int>(std::max<long long>(to_ping, 0)) + 1;
        wait_ms = wait_ms < 0 ? ping_wait : std::min(wait_ms, ping_wait);
      }
      const int ready = ::poll(polls.data(), polls.size(), wait_ms);
      if (ready < 0 && errno != EINTR) return std::string("poll: ") + std::strerror(errno);
      if (ready <= 0) continue;
      std::size_t at = listeners.size();
      if (signals) {
        if (polls[at].revents != 0) {
          signalfd_siginfo info{};
          if (::read(signals.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            return info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
          }
        }
        ++at;
      }
      if (options.stop_fd >= 0 && polls[at].revents != 0) return "asked to stop";
      for (std::size_t i = 0; i < listeners.size(); ++i) {
        if ((polls[i].revents & POLLIN) == 0) continue;
        UniqueFd connection(::accept4(listeners[i], nullptr, nullptr, SOCK_CLOEXEC));
        if (!connection) continue;
        // Accepted sockets inherit nothing from the listener's O_NONBLOCK on Linux: blocking I/O.
        const PeerCredentials peer = peer_credentials(connection.get());
        if (peer.uid != static_cast<long>(::getuid())) {
          Channel refusal(std::move(connection));
          (void)refusal.send(Refused{RefusalReason::other_user,
                                     "cuconv serve: this server belongs to uid " + std::to_string(::getuid()) +
                                         "; uid " + std::to_string(peer.uid) +
                                         " may not use it (each user runs their own: unset CUCONV_SOCKET or point it at yours)"});
          log_line(log_fd, "refused pid " + std::to_string(peer.pid) + ": uid " + std::to_string(peer.uid) +
                               " is not the server's user");
          continue;
        }
        std::unique_lock lock_state(state->mutex);
        state->last_activity = clock_type::now();
        if (state->active < max_clients) {
          ++state->active;
          lock_state.unlock();
          start_thread(std::move(connection), peer);
        } else if (state->waiting.size() < options.max_waiting) {
          Channel queued(std::move(connection));
          (void)queued.send(Queued{static_cast<std::uint32_t>(state->waiting.size()), options.ping_interval_ms});
          // The channel has read nothing yet, so the socket is handed on as it stands.
          state->waiting.emplace_back(::dup(queued.fd()));
        } else {
          Channel refusal(std::move(connection));
          (void)refusal.send(Refused{RefusalReason::busy, "cuconv serve: " + std::to_string(max_clients) + " clients running and " +
                                                               std::to_string(options.max_waiting) + " waiting"});
        }
      }
    }
  }();

  // Stop accepting; tell the waiting clients (they run in-process); finish the requests in flight.
  own_listener.reset();
  if (!activated) {
    struct stat now {};
    if (::stat(where.path.c_str(), &now) == 0 && now.st_ino == own_socket.st_ino && now.st_dev == own_socket.st_dev) {
      ::unlink(where.path.c_str());
    }
  }
  std::unique_lock lock_state(state->mutex);
  state->stopping = true;
  const unsigned in_flight = state->active;
  for (auto& waiting : state->waiting) {
    Channel refusal(std::move(waiting));
    (void)refusal.send(Refused{RefusalReason::shutting_down, "cuconv serve: the server is stopping"});
  }
  state->waiting.clear();
  log_line(log_fd, "stopping (" + why_stopped + "); " + std::to_string(in_flight) + " request(s) in flight");
  while (state->active > 0) {
    if (options.ping_interval_ms > 0 && clock_type::now() >= next_ping) {  // the drain may be long
      for (Channel* channel : state->live) (void)channel->send(Ping{});
      next_ping = clock_type::now() + std::chrono::milliseconds(options.ping_interval_ms);
    }
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
      state->changed.wait_for(lock_state, std::chrono::milliseconds(100));
    }
  }
  lock_state.unlock();
  if (options.handle_signals) ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  log_line(log_fd, "stopped");
  return 0;
}

}  // namespace cuconv::serve
