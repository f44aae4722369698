// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `cuconv serve`'s accepting thread (server.cpp) and its connection threads
// (server_connection.cpp) share: the server's state, what every connection knows of it, the log.
#include "serve/channel.hpp"
#include "serve/server.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cuconv::serve {

using clock_type = std::chrono::steady_clock;

/// One line of the server's log on `fd`.
inline void log_line(int fd, const std::string& text) {
  const std::string line = "cuconv serve: " + text + "\n";
  // One write per line, so lines of concurrent requests never interleave.
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
}

/// "12 s".
inline std::string seconds_text(clock_type::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

/// What the accepting thread and the connection threads share; threads hold it by shared_ptr so
/// the last one out may outlive run_server's frame.
struct ServerState {
  std::mutex mutex;
  std::condition_variable changed;
  unsigned connections = 0;         // connection threads running (from accept to close)
  unsigned active = 0;              // requests holding one of max_clients' places
  std::deque<std::uint64_t> queue;  // tickets of clients waiting for a place, oldest first
  std::uint64_t next_ticket = 0;
  bool stopping = false;
  std::string stop_asked;      // why a client asked the server to stop; empty: none did
  std::string exit_when_idle;  // why it exits once idle (a client of another build); empty: no
  bool executable_replaced = false;
  clock_type::time_point started = clock_type::now();
  clock_type::time_point last_activity = clock_type::now();
  std::uint64_t requests_served = 0;
  /// Answered connections, pinged while they wait or run; for each, since when the client has
  /// left bytes unread (a stopped client), and whether it was dropped for that.
  struct Watch {
    std::optional<clock_type::time_point> unread_since;
    bool dropped = false;
  };
  std::map<Channel*, Watch> live;
  std::vector<UniqueFd> stop_waiters;  // `serve --stop` clients: they see their end as the server ends
  UniqueFd wake_read, wake_write;      // a byte here wakes the accepting thread
  void wake() const noexcept {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_write.get(), &byte, 1);
  }
};

/// What every connection needs to know of the server.
struct ServerInfo {
  const ServerOptions& options;
  const Handler& handler;
  std::string socket_text;  // what it listens on, in words
};

/// One client from Hello to Exit (or to its Status, for a status or stop request), on the
/// connection thread that accepted it.
void serve_connection(UniqueFd socket, const PeerCredentials& peer, const ServerInfo& info, ServerState& state);

}  // namespace cuconv::serve
