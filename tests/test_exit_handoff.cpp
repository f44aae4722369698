// SPDX-License-Identifier: Apache-2.0
// The exit hand-off (src/cli/exit_handoff.hpp): a keeper holds the kept descriptors, and only
// those, until the process that made it has exited. Pipes stand in for the GPU's device files:
// a write to a pipe fails with EPIPE once no process holds its read end.
#include "cli/exit_handoff.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

/// Whether some process holds the read end of the pipe whose write end is `write_end`.
bool read_end_held(int write_end) {
  const char byte = 'x';
  return ::write(write_end, &byte, 1) == 1;  // EPIPE (SIGPIPE ignored) once nobody holds it
}

/// SIGPIPE ignored while alive.
struct IgnoreSigpipe {
  struct sigaction before {};
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &before);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &before, nullptr); }
};

}  // namespace

TEST_CASE("exit hand-off: open_files_under finds this process's descriptors by path") {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const std::vector<int> found = cuconv::cli::open_files_under("/dev/null");
  CHECK(std::find(found.begin(), found.end(), fd) != found.end());
  CHECK(cuconv::cli::open_files_under("/dev/no-such-device-").empty());
  ::close(fd);
  const std::vector<int> after = cuconv::cli::open_files_under("/dev/null");
  CHECK(std::find(after.begin(), after.end(), fd) == after.end());
}

TEST_CASE("exit hand-off: the keeper holds the kept files, and only those, until its maker has exited") {
  const IgnoreSigpipe ignore;
  int kept[2], other[2], ready[2], go[2];
  REQUIRE(::pipe(kept) == 0);
  REQUIRE(::pipe(other) == 0);
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(go) == 0);
  const pid_t maker = ::fork();
  REQUIRE(maker >= 0);
  if (maker == 0) {  // the process that exits: keeps `kept`'s read end through a keeper
    ::close(kept[1]);
    ::close(other[1]);
    ::close(ready[0]);
    ::close(go[1]);
    const bool handed = cuconv::cli::hand_to_keeper({kept[0]});
    ::close(kept[0]);   // from here only the keeper can hold it
    ::close(other[0]);  // and nobody this one
    const char byte = handed ? 'k' : 'n';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    char wait = 0;
    while (::read(go[0], &wait, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(kept[0]);
  ::close(other[0]);
  ::close(ready[1]);
  ::close(go[0]);
  char handed = 0;
  REQUIRE(::read(ready[0], &handed, 1) == 1);
  CHECK(handed == 'k');
  CHECK(read_end_held(kept[1]));         // the keeper holds the kept file
  CHECK_FALSE(read_end_held(other[1]));  // and no other descriptor of its maker's
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(read_end_held(kept[1]));  // still, while its maker lives
  ::close(go[1]);  // the maker exits
  int status = 0;
  REQUIRE(::waitpid(maker, &status, 0) == maker);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The keeper lets go once its maker has exited (within seconds; typically at once).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool released = false;
  while (!released && std::chrono::steady_clock::now() < deadline) {
    released = !read_end_held(kept[1]);
    if (!released) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(released);
  ::close(kept[1]);
  ::close(other[1]);
  ::close(ready[0]);
}
