// SPDX-License-Identifier: Apache-2.0
#pragma once
// One end of a serve connection: frames (protocol.hpp) sent and received over a unix stream socket,
// with descriptors passed alongside (SCM_RIGHTS). Received descriptors wait in arrival order until
// the message that carries them takes them, so a frame split across reads keeps its descriptors.
#include "serve/protocol.hpp"

#include <deque>
#include <mutex>
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
  /// message is over the bounds. Never raises SIGPIPE. Safe beside another thread's send (the
  /// server's Ping); receiving is for one thread at a time.
  bool send(const Message& message, std::span<const int> fds = {});

  /// Waits up to `timeout_ms` (-1: no limit) for one whole message.
  [[nodiscard]] Received receive(int timeout_ms = -1);

  /// The oldest received descriptor not yet taken; an empty UniqueFd when none came.
  [[nodiscard]] UniqueFd take_fd();
  /// Closes every received descriptor nobody took (a message that should have carried none).
  void drop_fds() noexcept { fds_.clear(); }

  [[nodiscard]] int fd() const noexcept { return socket_.get(); }

 private:
  /// Reads what is there into buffer_ (and descriptors into fds_); false at end, error or limit.
  Received::Status fill(int timeout_ms, std::string& error);

  UniqueFd socket_;
  std::mutex send_mutex_;
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

}  // namespace cuconv::serve
