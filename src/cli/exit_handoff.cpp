// SPDX-License-Identifier: Apache-2.0
// The keeper of exit_handoff.hpp: a fork() child that closes every descriptor but the kept ones
// and one pipe's read end, then blocks reading that pipe. The parent holds the pipe's write end
// and never writes to it, so the read returns when the parent has exited (its descriptors closed).
// After fork() the child runs only async-signal-safe calls (close, setsid, read, _exit): the
// parent has other threads, whose locks the child may hold copies of.
#include "cli/exit_handoff.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <unistd.h>

namespace cuconv::cli {

namespace {

/// Every descriptor open in this process (read from /proc/self/fd, the listing's own excluded).
std::vector<int> open_descriptors() {
  std::vector<int> found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  const int listing = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd != listing) found.push_back(fd);
  }
  ::closedir(dir);
  return found;
}

/// Reads `fd` until end of file (EINTR retried), discarding what comes: async-signal-safe.
void read_to_end(int fd) noexcept {
  char byte = 0;
  for (;;) {
    const ssize_t got = ::read(fd, &byte, 1);
    if (got == 0 || (got < 0 && errno != EINTR)) return;
  }
}

}  // namespace

std::vector<int> open_files_under(std::string_view prefix) {
  std::vector<int> matching;
  for (const int fd : open_descriptors()) {
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    std::array<char, 256> target{};
    const ssize_t length = ::readlink(link.c_str(), target.data(), target.size() - 1);
    if (length > 0 && std::string_view(target.data(), static_cast<std::size_t>(length)).starts_with(prefix))
      matching.push_back(fd);
  }
  return matching;
}

bool hand_to_keeper(const std::vector<int>& keep) {
  int parent_alive[2];
  if (::pipe(parent_alive) != 0) return false;
  // The keeper closes its copy of `closed`'s write end last: its end of file tells this process
  // that the keeper holds nothing but `keep` (a reader of this process's standard output, say, is
  // not kept waiting by it).
  int closed[2];
  if (::pipe(closed) != 0) {
    ::close(parent_alive[0]);
    ::close(parent_alive[1]);
    return false;
  }
  // Everything the keeper must close, listed before fork(): the child allocates nothing.
  std::vector<int> to_close;
  for (const int fd : open_descriptors())
    if (fd != parent_alive[0] && fd != closed[1] && std::find(keep.begin(), keep.end(), fd) == keep.end())
      to_close.push_back(fd);
  to_close.push_back(closed[1]);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const int fd : to_close) ::close(fd);  // the pipes' other ends and the standard streams too
    ::setsid();
    read_to_end(parent_alive[0]);  // end of file: the parent has exited
    ::_exit(0);
  }
  ::close(closed[1]);
  if (pid > 0) read_to_end(closed[0]);
  ::close(closed[0]);
  ::close(parent_alive[0]);
  if (pid < 0) ::close(parent_alive[1]);
  return pid > 0;  // parent_alive[1] stays open until this process exits
}

void exit_leaving_teardown(int code) {
  const std::vector<int> device_files = open_files_under("/dev/nvidia");
  if (!device_files.empty()) static_cast<void>(hand_to_keeper(device_files));
  std::_Exit(code);
}

}  // namespace cuconv::cli
