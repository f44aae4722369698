// SPDX-License-Identifier: Apache-2.0
#pragma once
// One end of a serve connection: frames (protocol.hpp) sent and received over a unix stream socket,
// with descriptors passed alongside (SCM_RIGHTS). Received descriptors wait in arrival order until
// the message that carries them takes them, so a frame split across reads keeps its descriptors.
#include "serve/protocol.hpp"

#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cuconv::serve {

/// An owned descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/// What a receive brought: a message, the peer's end of the connection, a time-out, an
/// interruption (the flag given to the channel was set), or a broken or refused frame.
struct Received {
  enum class Status { message, closed, timeout, interrupted, bad };
  Status status = Status::bad;
  Message message;
  std::string error;  ///< for bad: what was wrong (oversized, undecodable, system error)
};

class Channel {
 public:
  /// Takes `socket` (owned). `interrupt_fd`, when given, is watched beside the socket: readable
  /// (a signal handler wrote to its pipe), a receive returns Status::interrupted. A pipe rather
  /// than a flag: a signal between two waits is not lost.
  explicit Channel(UniqueFd socket, int interrupt_fd = -1) : socket_(std::move(socket)), interrupt_fd_(interrupt_fd) {}

  /// Sends one message with `fds` attached; false (and errno) when the peer is gone or the
  /// message is over the bounds. Never raises SIGPIPE. Safe beside other threads' sends: frames
  /// never interleave. Receiving is for one thread at a time.
  bool send(const Message& message, std::span<const int> fds = {});

  /// Sends `message` only if that blocks nobody: not while another thread is sending, not into a
  /// full socket buffer (the server's Ping). A frame the socket took in part is finished by the
  /// next send. False when nothing was sent.
  bool try_send(const Message& message) noexcept;

  /// Waits up to `timeout_ms` (-1: no limit) for one whole message: the time counts from the
  /// call, however the bytes trickle in.
  [[nodiscard]] Received receive(int timeout_ms = -1);

  /// The oldest received descriptor not yet taken; an empty UniqueFd when none came.
  [[nodiscard]] UniqueFd take_fd();
  /// Closes every received descriptor nobody took (a message that should have carried none).
  void drop_fds() noexcept { fds_.clear(); }

  [[nodiscard]] int fd() const noexcept { return socket_.get(); }

 private:
  using clock_type = std::chrono::steady_clock;
  /// Reads what is there into buffer_ (and descriptors into fds_), waiting until `deadline`
  /// (none: no limit); message when some bytes came, else why not.
  Received::Status fill(std::optional<clock_type::time_point> deadline, std::string& error);
  /// Sends the rest of a frame try_send left; under send_mutex_. False when the peer is gone, or
  /// (`wait` false) when the socket would block.
  bool flush_pending(bool wait);

  UniqueFd socket_;
  std::mutex send_mutex_;
  std::vector<std::uint8_t> pending_;  ///< the unsent end of a frame try_send began
  int interrupt_fd_;
  std::vector<std::uint8_t> buffer_;
  std::deque<UniqueFd> fds_;
};

/// The uid and pid of the process at the other end of a connected unix socket (SO_PEERCRED).
struct PeerCredentials {
  long pid = -1;
  long uid = -1;
};
[[nodiscard]] PeerCredentials peer_credentials(int socket_fd);

/// How connect_socket went: connected, nobody there (no socket, or nobody listening), or failed.
enum class Connect { ok, absent, failed };

/// Connects to the unix socket at `path` within `timeout_ms` (a server whose backlog is full is
/// retried, not waited on forever); the socket is blocking and close-on-exec, and never takes
/// descriptor 0, 1 or 2 (a caller with one of them closed keeps it closed). `why` says why not.
[[nodiscard]] Connect connect_socket(const std::string& path, int timeout_ms, UniqueFd& socket, std::string& why);

}  // namespace cuconv::serve
