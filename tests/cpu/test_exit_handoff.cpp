// SPDX-License-Identifier: Apache-2.0
// The exit hand-off (src/cli/exit_handoff.hpp): a keeper holds the kept descriptors, and only
// those, until the process that made it has exited. Pipes stand in for the GPU's device files:
// a write to a pipe fails with EPIPE once no process holds its read end.
#include "cli/exit_handoff.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  ::close(go[1]);                 // the maker exits
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

namespace {

/// The descriptors of process `pid` (its /proc/PID/fd), -1 where it cannot be read.
int descriptor_count(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  if (::access(dir.c_str(), R_OK) != 0) return -1;
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++count;
  return count;
}

/// The children of this process (from /proc/PID/stat's fourth field).
std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    if (rest >> state >> parent && parent == ::getpid()) found.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return found;
}

}  // namespace

TEST_CASE("exit hand-off: descriptors another thread opens while the keeper is made stay out of it") {
  // In a child process (a maker of 30 keepers): a thread opens /dev/null in a loop while the
  // keepers are made; each keeper must hold exactly its kept descriptor and the pipe it waits on.
  const pid_t maker = ::fork();
  REQUIRE(maker >= 0);
  if (maker == 0) {
    const int kept = ::open("/dev/null", O_RDONLY);
    std::atomic<bool> stop{false};
    std::thread opener([&] {
      std::vector<int> opened;
      while (!stop.load()) {
        opened.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (opened.size() == 200) {
          for (const int fd : opened) ::close(fd);
          opened.clear();
        }
      }
      for (const int fd : opened) ::close(fd);
    });
    int wrong = 0;
    for (int i = 0; i < 30; ++i) {
      const std::vector<pid_t> before = children_of_this_process();
      if (!cuconv::cli::hand_to_keeper({kept})) ::_exit(3);
      for (const pid_t child : children_of_this_process())
        if (std::find(before.begin(), before.end(), child) == before.end() && descriptor_count(child) != 2) ++wrong;
    }
    stop = true;
    opener.join();
    ::_exit(wrong == 0 ? 0 : 10 + std::min(wrong, 100));
  }
  int status = 0;
  REQUIRE(::waitpid(maker, &status, 0) == maker);
  REQUIRE(WIFEXITED(status));
  INFO("exit status " << WEXITSTATUS(status) << " (10 + keepers holding another descriptor)");
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("exit hand-off: a program started after the hand-off does not keep the keeper waiting") {
  // The keeper waits for the end of file of a pipe whose write end its maker holds; a program
  // the maker starts afterwards (another thread's, say) must not inherit it (close-on-exec).
  const IgnoreSigpipe ignore;
  int kept[2], ready[2];
  REQUIRE(::pipe(kept) == 0);
  REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
  const pid_t maker = ::fork();
  REQUIRE(maker >= 0);
  if (maker == 0) {
    ::close(kept[1]);
    ::close(ready[0]);
    if (!cuconv::cli::hand_to_keeper({kept[0]})) ::_exit(3);
    ::close(kept[0]);
    const pid_t program = ::fork();
    if (program == 0) {
      ::execl("/bin/sleep", "sleep", "5", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const std::string text = std::to_string(program);
    if (::write(ready[1], text.data(), text.size()) != static_cast<ssize_t>(text.size())) ::_exit(4);
    ::_exit(0);  // the maker exits; `sleep` lives on
  }
  ::close(kept[0]);
  ::close(ready[1]);
  char text[32] = {};
  REQUIRE(::read(ready[0], text, sizeof text - 1) > 0);
  const pid_t program = static_cast<pid_t>(std::atoi(text));
  int status = 0;
  REQUIRE(::waitpid(maker, &status, 0) == maker);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  bool released = false;
  while (!released && std::chrono::steady_clock::now() < deadline) {
    released = !read_end_held(kept[1]);
    if (!released) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(released);  // within 2 s, while `sleep 5` still runs
  if (program > 0) ::kill(program, SIGKILL);
  ::close(kept[1]);
  ::close(ready[0]);
}
