// SPDX-License-Identifier: Apache-2.0
// One `cuconv serve` connection (server_state.hpp): the Hello within its deadline, status and stop
// requests, one of max_clients' places for a command (or a wait in line for one, told with
// Queued), the command run by the handler, and its log line.
#include "serve/server_state.hpp"

#include "serve/build_identity.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace cuconv::serve {

namespace {

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

/// Keeps `channel` in state.live (pinged, watched for a stall) for its scope.
class LiveChannel {
 public:
  LiveChannel(ServerState& state, Channel& channel) : state_(state), channel_(channel) {
    std::lock_guard lock(state_.mutex);
    state_.live.emplace(&channel_, ServerState::Watch{});
  }
  ~LiveChannel() {
    std::lock_guard lock(state_.mutex);
    state_.live.erase(&channel_);
  }
  LiveChannel(const LiveChannel&) = delete;
  LiveChannel& operator=(const LiveChannel&) = delete;

 private:
  ServerState& state_;
  Channel& channel_;
};

/// A request's place among max_clients for its scope: waits in line (Queued, then Welcome) when
/// all are taken. held() is false when the server is stopping or the line is full.
class Place {
 public:
  /// Takes a place at once or joins the line; `queued` is called (without the lock) with the
  /// number of clients ahead when it has to wait.
  Place(ServerState& state, const ServerOptions& options, const std::function<void(std::uint32_t)>& queued)
      : state_(state) {
    std::unique_lock lock(state_.mutex);
    const unsigned max_clients = std::max(options.max_clients, 1U);
    if (state_.stopping) return;
    if (state_.active < max_clients && state_.queue.empty()) {
      ++state_.active;
      held_ = true;
      return;
    }
    if (state_.queue.size() >= options.max_waiting) {
      busy_ = true;
      return;
    }
    const std::uint64_t ticket = state_.next_ticket++;
    state_.queue.push_back(ticket);
    const auto ahead = static_cast<std::uint32_t>(state_.queue.size() - 1);
    lock.unlock();
    queued(ahead);
    lock.lock();
    state_.changed.wait(
        lock, [&] { return state_.stopping || (state_.queue.front() == ticket && state_.active < max_clients); });
    state_.queue.erase(std::find(state_.queue.begin(), state_.queue.end(), ticket));
    if (state_.stopping) {
      state_.changed.notify_all();
      return;
    }
    ++state_.active;
    held_ = true;
    state_.changed.notify_all();  // the next in line may fit too
  }
  ~Place() {
    if (!held_) return;
    std::lock_guard lock(state_.mutex);
    --state_.active;
    state_.last_activity = clock_type::now();
    state_.changed.notify_all();
  }
  Place(const Place&) = delete;
  Place& operator=(const Place&) = delete;
  [[nodiscard]] bool held() const noexcept { return held_; }
  [[nodiscard]] bool busy() const noexcept { return busy_; }

 private:
  ServerState& state_;
  bool held_ = false;
  bool busy_ = false;
};

/// The server as `cuconv serve --status` shows it.
Status status_of(ServerState& state, const ServerInfo& info) {
  Status status;
  status.pid = static_cast<std::uint32_t>(::getpid());
  status.build = info.options.build;
  status.executable = info.options.executable;
  status.socket = info.socket_text;
  {
    std::lock_guard lock(state.mutex);
    status.uptime_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - state.started).count());
    status.requests_served = state.requests_served;
    status.clients_now = state.active;
    status.clients_waiting = static_cast<std::uint32_t>(state.queue.size());
    status.executable_replaced = state.executable_replaced;
  }
  if (info.options.describe) info.options.describe(status);
  return status;
}

/// The `what` (a T) the client must send next, whole within message_deadline_ms; otherwise the
/// client is refused (unless it hung up: then nobody is told) and nothing is returned.
template <class T>
std::optional<T> expect(Channel& channel, const char* what, const ServerOptions& options, const std::string& who) {
  Received received = channel.receive(static_cast<int>(options.message_deadline_ms));
  if (received.status == Received::Status::message && std::holds_alternative<T>(received.message)) {
    return std::get<T>(std::move(received.message));
  }
  if (received.status == Received::Status::closed) return std::nullopt;
  const std::string why =
      received.status == Received::Status::timeout
          ? "no whole " + std::string(what) + " within " + std::to_string(options.message_deadline_ms) + " ms"
      : received.error.empty() ? "expected a " + std::string(what)
                               : received.error;
  (void)channel.try_send(Refused{RefusalReason::bad_message, "cuconv serve: " + why});  // it may read nothing
  log_line(options.log_fd, who + ": refused: " + why);
  return std::nullopt;
}

}  // namespace

void serve_connection(UniqueFd socket, const PeerCredentials& peer, const ServerInfo& info, ServerState& state) {
  const ServerOptions& options = info.options;
  const int log_fd = options.log_fd;
  const std::string who = "pid " + std::to_string(peer.pid);
  Channel channel(std::move(socket));
  const std::optional<Hello> hello = expect<Hello>(channel, "hello", options, who);
  channel.drop_fds();  // a Hello carries none
  if (!hello) return;
  const Hello& h = *hello;
  if (h.magic != kProtocolMagic || h.version != kProtocolVersion) {
    (void)channel.send(Refused{RefusalReason::version,
                               "cuconv serve: this server speaks protocol version " + std::to_string(kProtocolVersion) +
                                   ", the client " + std::to_string(h.version) +
                                   " (a server from another cuconv release is running: restart it)"});
    log_line(log_fd, who + ": refused: protocol version " + std::to_string(h.version));
    return;
  }
  switch (h.purpose) {
    case HelloPurpose::command:
      break;
    case HelloPurpose::status:
      (void)channel.send(status_of(state, info));
      return;
    case HelloPurpose::stop: {
      (void)channel.send(status_of(state, info));
      std::lock_guard lock(state.mutex);
      if (state.stop_asked.empty()) state.stop_asked = "asked to stop by " + who;
      state.stop_waiters.emplace_back(::fcntl(channel.fd(), F_DUPFD_CLOEXEC, 3));
      state.wake();
      return;
    }
    case HelloPurpose::stop_when_idle: {
      (void)channel.send(status_of(state, info));
      std::lock_guard lock(state.mutex);
      if (state.exit_when_idle.empty())
        state.exit_when_idle = who + " of another build (" + printable(h.build) + ") asked it to exit once idle";
      state.wake();
      return;
    }
  }
  if (!options.identity.empty() && !h.engine_identity.empty() && h.engine_identity != options.identity) {
    const std::string why = "this server runs another cuconv build or binary (" + options.build + ", " +
                            options.executable + ") than the client's engine (" + printable(h.build) +
                            "): upgraded or rebuilt since the server started";
    (void)channel.send(Refused{RefusalReason::build, "cuconv serve: " + why});
    log_line(log_fd, who + ": refused: " + why);
    return;
  }

  const LiveChannel live(state, channel);
  const Place place(state, options, [&](std::uint32_t ahead) {
    (void)channel.send(Queued{ahead, options.ping_interval_ms});
  });
  if (!place.held()) {
    if (place.busy()) {
      (void)channel.send(Refused{RefusalReason::busy, "cuconv serve: " + std::to_string(options.max_clients) +
                                                          " clients running and " +
                                                          std::to_string(options.max_waiting) + " waiting"});
    } else {
      (void)channel.send(Refused{RefusalReason::shutting_down, "cuconv serve: the server is stopping"});
    }
    return;
  }
  if (!channel.send(
          Welcome{kProtocolVersion, static_cast<std::uint32_t>(::getpid()), options.ping_interval_ms, options.build}))
    return;

  std::optional<Request> request = expect<Request>(channel, "request", options, who);
  if (!request) return;
  Request& asked = *request;
  ClientRequest client{std::move(asked.argv),
                       std::move(asked.cwd),
                       std::move(asked.environment),
                       asked.file_size_limit,
                       asked.err_is_terminal,
                       peer.pid,
                       peer.uid,
                       "pid " + std::to_string(::getpid()) + ", socket " + info.socket_text + ", " + options.build +
                           ", up " + seconds_text(clock_type::now() - state.started)};
  UniqueFd in = channel.take_fd(), out = channel.take_fd(), err = channel.take_fd();
  channel.drop_fds();
  if (!in || !out || !err || client.argv.empty()) {
    (void)channel.send(
        Refused{RefusalReason::bad_message, "cuconv serve: a request needs argv and descriptors 0, 1 and 2"});
    return;
  }

  const auto start = clock_type::now();
  int code = 1;
  std::optional<Refusal> refused;
  {
    ClientSession session(channel, std::move(in), std::move(out), std::move(err), client.file_size_limit);
    try {
      code = info.handler(client, session);
    } catch (Refusal& refusal) {  // nothing has run: the client runs the command itself
      refused = std::move(refusal);
    } catch (const std::exception& e) {
      const std::string text = "cuconv: internal error in the server: " + std::string(e.what()) + "\n";
      [[maybe_unused]] const ssize_t n = ::write(session.err_fd(), text.data(), text.size());
    } catch (...) {
      const std::string text = "cuconv: internal error in the server\n";
      [[maybe_unused]] const ssize_t n = ::write(session.err_fd(), text.data(), text.size());
    }
  }  // the client's descriptors close before it learns the exit code, so its pipes see their end
  if (refused) {
    (void)channel.send(Refused{refused->reason, refused->message});
    log_line(log_fd, "pid " + std::to_string(peer.pid) + ": refused: " + refused->message);
    return;
  }
  {
    std::lock_guard lock(state.mutex);
    ++state.requests_served;
  }
  const bool told = channel.send(Exit{code});
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f ms", ms);
  log_line(log_fd, "pid " + std::to_string(peer.pid) + " [" + printable(client.cwd) + "] " +
                       describe_argv(client.argv) + " -> exit " + std::to_string(code) + " in " + took +
                       (told ? "" : " (the client had gone)"));
}

}  // namespace cuconv::serve
