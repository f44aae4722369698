// SPDX-License-Identifier: Apache-2.0
// The keeper of exit_handoff.hpp: a fork() child that closes every descriptor but the kept ones
// and one pipe's read end, then blocks reading that pipe. The parent holds the pipe's write end
// and never writes to it, so the read returns when the parent has exited (its descriptors closed).
// After fork() the child runs only async-signal-safe calls (close_range or close, setsid, read,
// _exit): the parent has other threads, whose locks the child may hold copies of, and which may
// open descriptors after any listing, so the child closes every number but the kept ones.
#include "cli/exit_handoff.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

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

/// Closes descriptors `low` to `high`: close_range(2) where the kernel has it, else one by one up
/// to `limit` (the descriptor limit, read before fork). Async-signal-safe.
void close_between(unsigned low, unsigned high, unsigned limit) noexcept {
  if (low > high) return;
  if (::syscall(SYS_close_range, low, high, 0U) == 0) return;
  for (unsigned fd = low; fd <= high && fd < limit; ++fd) ::close(static_cast<int>(fd));
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
  // Close-on-exec: a program another thread starts must not hold the write end, or the keeper
  // would wait for that program's exit too.
  int parent_alive[2];
  if (::pipe2(parent_alive, O_CLOEXEC) != 0) return false;
  // The keeper closes its copy of `closed`'s write end last: its end of file tells this process
  // that the keeper holds nothing but `keep` (a reader of this process's standard output, say, is
  // not kept waiting by it).
  int closed[2];
  if (::pipe2(closed, O_CLOEXEC) != 0) {
    ::close(parent_alive[0]);
    ::close(parent_alive[1]);
    return false;
  }
  // What the keeper keeps open while it closes the rest, sorted, listed before fork(): the child
  // allocates nothing.
  std::vector<int> kept(keep.begin(), keep.end());
  kept.push_back(parent_alive[0]);
  kept.push_back(closed[1]);
  std::sort(kept.begin(), kept.end());
  rlimit files{};
  const unsigned limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < UINT_MAX
                             ? static_cast<unsigned>(files.rlim_cur)
                             : 1U << 20;
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Every number between the kept ones: the pipes' other ends, the standard streams, and what
    // other threads opened after any listing.
    unsigned next = 0;
    for (const int fd : kept) {
      if (fd < 0 || static_cast<unsigned>(fd) < next) continue;  // a duplicate
      if (static_cast<unsigned>(fd) > next) close_between(next, static_cast<unsigned>(fd) - 1U, limit);
      next = static_cast<unsigned>(fd) + 1U;
    }
    close_between(next, UINT_MAX, limit);
    ::close(closed[1]);
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
