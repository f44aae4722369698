// SPDX-License-Identifier: Apache-2.0
#pragma once
// The served client's standard output and error: relayed through pipes it copies itself where
// the caller's are pipes or sockets, handed over as they are otherwise (client.cpp).
#include "serve/channel.hpp"  // UniqueFd

#include "common/write_all.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace cuconv::serve {

/// A descriptor to hand over for `fd`: itself when open, else /dev/null (a closed stdin).
inline UniqueFd usable(int fd) {
  if (::fcntl(fd, F_GETFD) >= 0) return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  return UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
}

/// Standard output and error handed to the server through pipes that this client copies
/// (splice(2), no copy through user memory) to its own descriptors, where those are pipes or
/// sockets: then only the client holds the caller's pipes, so a `$(cuconv ...)` ends when the
/// client does, whatever a stopped server does after, and a reader that went away gives the
/// client its own SIGPIPE, as it would a process of its own. Terminals and files are handed over
/// as they are (a file's size limit is then the server's to mimic: Files::file_size_limit).
class OutputRelay {
 public:
  OutputRelay() : state_(std::make_shared<State>()) {}
  /// Abandons the copy (the server is gone or the client gives up): the thread is left to end
  /// with the process, holding its own ends.
  ~OutputRelay() {
    if (!thread_.joinable()) return;
    [[maybe_unused]] const ssize_t n = ::write(state_->stop_write.get(), "x", 1);
    thread_.detach();
  }
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  /// What to hand the server for descriptor `target` (1 or 2): the write end of a relay pipe, or
  /// a duplicate of `target` itself. Call for each before start().
  UniqueFd for_server(int target) {
    struct stat st {};
    if (::fstat(target, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return usable(target);
    int ends[2] = {-1, -1};
    if (::pipe2(ends, O_CLOEXEC) != 0) return usable(target);
    state_->sources.push_back({UniqueFd(ends[0]), target});
    return UniqueFd(ends[1]);
  }
  void start() {
    if (state_->sources.empty()) return;
    int ends[2] = {-1, -1};
    if (::pipe2(ends, O_CLOEXEC) != 0) return;  // no relay: the server's writes block, as to a stalled reader
    state_->stop_read.reset(ends[0]);
    state_->stop_write.reset(ends[1]);
    // The relay thread never takes SIGINT, SIGTERM or SIGHUP: delivered to the main thread, a
    // signal is handled before that thread looks at the server's next message (see run_served's
    // loop). SIGPIPE stays: a closed reader of the caller's pipe ends this process as in-process.
    sigset_t relay_blocks, old;
    sigemptyset(&relay_blocks);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&relay_blocks, signal);
    ::pthread_sigmask(SIG_BLOCK, &relay_blocks, &old);
    thread_ = std::thread([state = state_] { copy(*state); });
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  /// Waits until the server has closed its ends (it does before it sends Exit) and all is copied.
  void finish() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Source {
    UniqueFd from;
    int to = -1;
  };
  struct State {
    std::vector<Source> sources;
    UniqueFd stop_read, stop_write;
  };

  static void copy(State& state) {
    std::size_t open = state.sources.size();
    while (open > 0) {
      std::vector<pollfd> polled{{state.stop_read.get(), POLLIN, 0}};
      for (const Source& source : state.sources) polled.push_back({source.from ? source.from.get() : -1, POLLIN, 0});
      if (::poll(polled.data(), polled.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (polled[0].revents != 0) return;
      for (std::size_t i = 0; i < state.sources.size(); ++i) {
        Source& source = state.sources[i];
        if (!source.from || polled[i + 1].revents == 0) continue;
        if (!copy_some(source)) {
          source.from.reset();
          --open;
        }
      }
    }
  }

  /// Copies what `source` has ready; false at its end, or when its target refuses more (a reader
  /// gone with SIGPIPE ignored: the server's next write then fails as the command's own would).
  static bool copy_some(Source& source) {
    for (;;) {
      const ssize_t n = ::splice(source.from.get(), nullptr, source.to, nullptr, std::size_t{1} << 20, SPLICE_F_MOVE);
      if (n > 0) return true;
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno != EINVAL) return false;
      // A target splice cannot write to: through a buffer.
      char buffer[1 << 16];
      const ssize_t got = ::read(source.from.get(), buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      return got > 0 && common::write_all(source.to, std::string_view(buffer, static_cast<std::size_t>(got)));
    }
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace cuconv::serve
