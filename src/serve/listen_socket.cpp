// SPDX-License-Identifier: Apache-2.0
// Where `cuconv serve` listens (see listen_socket.hpp).
#include "serve/listen_socket.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cuconv::serve {

UniqueFd bind_socket(const SocketPath& where, UniqueFd& lock, std::string& error) {
  error = where.from_environment ? check_socket_folder(where.folder) : prepare_private_folder(where.folder);
  if (!error.empty()) return {};
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (where.path.size() >= sizeof address.sun_path) {
    error = where.path + ": the socket path is longer than " + std::to_string(sizeof address.sun_path - 1) + " bytes";
    return {};
  }
  std::memcpy(address.sun_path, where.path.c_str(), where.path.size() + 1);
  // The lock: never through a link someone planted, and only a regular file of ours.
  const std::string lock_path = where.path + ".lock";
  lock.reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0600));
  if (!lock) {
    error =
        lock_path + ": " + (errno == ELOOP ? std::string("a symbolic link; not following it") : std::strerror(errno));
    return {};
  }
  struct stat lock_stat {};
  if (::fstat(lock.get(), &lock_stat) != 0 || !S_ISREG(lock_stat.st_mode) || lock_stat.st_uid != ::getuid()) {
    error = lock_path + ": not a regular file of this user; not using it as the server's lock";
    lock.reset();
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
  if (struct stat there{}; ::lstat(where.path.c_str(), &there) == 0) {
    if (!S_ISSOCK(there.st_mode) || there.st_uid != ::getuid()) {
      error = where.path + ": " + (S_ISSOCK(there.st_mode) ? "another user's socket" : "exists and is not a socket") +
              "; not replacing it (choose another --socket)";
      return {};
    }
    // A socket that still answers belongs to a server without our lock: one started by systemd's
    // cuconv.socket (the socket is systemd's). Only a dead socket is replaced.
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe && ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      error = where.path + ": something already listens there (systemd's cuconv.socket?); not replacing it";
      return {};
    }
    ::unlink(where.path.c_str());  // a socket left by a server that died
  }
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

}  // namespace cuconv::serve
