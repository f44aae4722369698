// SPDX-License-Identifier: Apache-2.0
// Frames over a unix stream socket with SCM_RIGHTS descriptors (see channel.hpp).
#include "serve/channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace cuconv::serve {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

/// One sendmsg of `bytes` (with `fds` on the first byte); the bytes sent, or -1 and errno.
ssize_t send_some(int socket, std::span<const std::uint8_t> bytes, std::span<const int> fds, int flags) {
  iovec iov{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
  msghdr header{};
  header.msg_iov = &iov;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  if (!fds.empty()) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(socket, &header, MSG_NOSIGNAL | flags);
}

}  // namespace

bool Channel::flush_pending(bool wait) {
  while (!pending_.empty()) {
    const ssize_t n = send_some(socket_.get(), pending_, {}, wait ? 0 : MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    pending_.erase(pending_.begin(), pending_.begin() + n);
  }
  return true;
}

bool Channel::send(const Message& message, std::span<const int> fds) {
  std::vector<std::uint8_t> frame;
  try {
    frame = encode(message);
  } catch (const std::exception&) {
    errno = EMSGSIZE;
    return false;
  }
  if (fds.size() > kMaxFds) {
    errno = EINVAL;
    return false;
  }
  std::lock_guard lock(send_mutex_);
  if (!flush_pending(true)) return false;
  std::size_t sent = 0;
  while (sent < frame.size()) {
    // The descriptors ride on the frame's first byte.
    const ssize_t n =
        send_some(socket_.get(), std::span(frame).subspan(sent), sent == 0 ? fds : std::span<const int>{}, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

bool Channel::try_send(const Message& message) noexcept {
  try {
    std::unique_lock lock(send_mutex_, std::try_to_lock);
    if (!lock.owns_lock() || !flush_pending(false)) return false;
    const std::vector<std::uint8_t> frame = encode(message);
    ssize_t n = -1;
    do n = send_some(socket_.get(), frame, {}, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    pending_.assign(frame.begin() + n, frame.end());  // the next send finishes the frame first
    return true;
  } catch (...) {
    return false;
  }
}

Received::Status Channel::fill(std::optional<clock_type::time_point> deadline, std::string& error) {
  for (;;) {
    int wait = -1;
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - clock_type::now()).count();
      wait = left > 0 ? static_cast<int>(std::min<long long>(left, 1'000'000'000)) : 0;
    }
    pollfd p[2] = {{socket_.get(), POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    const int ready = ::poll(p, interrupt_fd_ >= 0 ? 2 : 1, wait);
    if (ready < 0) {
      if (errno == EINTR) continue;
      error = std::string("poll: ") + std::strerror(errno);
      return Received::Status::bad;
    }
    if (ready == 0) return Received::Status::timeout;
    if (interrupt_fd_ >= 0 && p[1].revents != 0) return Received::Status::interrupted;

    std::uint8_t chunk[64 * 1024];
    iovec iov{chunk, sizeof chunk};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)];
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket_.get(), &header, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return Received::Status::closed;
      error = std::string("recvmsg: ") + std::strerror(errno);
      return Received::Status::bad;
    }
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr; cmsg = CMSG_NXTHDR(&header, cmsg)) {
      if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof fd);
        fds_.emplace_back(fd);
      }
    }
    if ((header.msg_flags & MSG_CTRUNC) != 0 || fds_.size() > 4 * kMaxFds) {
      error = "too many descriptors sent";
      return Received::Status::bad;
    }
    if (n == 0) return Received::Status::closed;
    buffer_.insert(buffer_.end(), chunk, chunk + n);
    return Received::Status::message;  // "some bytes arrived"
  }
}

Received Channel::receive(int timeout_ms) {
  // One deadline for the whole message: a peer dripping a byte at a time gains nothing.
  std::optional<clock_type::time_point> deadline;
  if (timeout_ms >= 0) deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
  Received result;
  for (;;) {
    if (buffer_.size() >= kHeaderSize) {
      const auto header = parse_header(buffer_, result.error);
      if (!header) {
        result.status = Received::Status::bad;
        return result;
      }
      if (buffer_.size() >= kHeaderSize + header->payload_size) {
        const std::span<const std::uint8_t> payload(buffer_.data() + kHeaderSize, header->payload_size);
        auto message = decode(header->type, payload, result.error);
        buffer_.erase(buffer_.begin(),
                      buffer_.begin() + static_cast<std::ptrdiff_t>(kHeaderSize + header->payload_size));
        if (!message) {
          result.status = Received::Status::bad;
          return result;
        }
        result.status = Received::Status::message;
        result.message = std::move(*message);
        return result;
      }
    }
    const auto status = fill(deadline, result.error);
    if (status != Received::Status::message) {
      if (status == Received::Status::closed && !buffer_.empty()) {
        result.error = "the connection closed in the middle of a message";
      }
      result.status = status;
      return result;
    }
  }
}

UniqueFd Channel::take_fd() {
  if (fds_.empty()) return {};
  UniqueFd fd = std::move(fds_.front());
  fds_.pop_front();
  return fd;
}

PeerCredentials peer_credentials(int socket_fd) {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0) return {};
  return PeerCredentials{cred.pid, static_cast<long>(cred.uid)};
}

Connect connect_socket(const std::string& path, int timeout_ms, UniqueFd& socket, std::string& why) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    why = path + ": the socket path is too long";
    return Connect::failed;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    socket.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (socket && socket.get() <= 2) socket.reset(::fcntl(socket.get(), F_DUPFD_CLOEXEC, 3));  // closes the low one
    if (!socket) {
      why = std::string("socket: ") + std::strerror(errno);
      return Connect::failed;
    }
    if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) break;
    if (errno == ENOENT || errno == ECONNREFUSED || errno == ENOTDIR) return Connect::absent;
    if (errno != EAGAIN && errno != EINTR) {
      why = path + ": " + std::strerror(errno);
      return Connect::failed;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      why = path + ": the server accepts no connection (its queue is full)";
      return Connect::failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::fcntl(socket.get(), F_SETFL, ::fcntl(socket.get(), F_GETFL) & ~O_NONBLOCK);
  return Connect::ok;
}

}  // namespace cuconv::serve
