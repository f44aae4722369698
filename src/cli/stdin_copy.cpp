// SPDX-License-Identifier: Apache-2.0
// Standard input to a temporary file that no interruption leaves behind.
#include "cli/stdin_copy.hpp"

#include <cuconv/error.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <pthread.h>
#include <unistd.h>
#include <vector>

namespace cuconv::cli {

namespace {

/// Writes all of `data`; false with errno set on failure.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

StdinCopy::StdinCopy(int fd, const std::filesystem::path& folder, bool on_signals) {
  if (on_signals) on_signal_.emplace("working on standard input (its temporary copy was removed)");
  std::string pattern = (folder / "cuconv-stdin-XXXXXX").string();
  // SIGINT and SIGTERM wait while the file is made and registered: one arriving in between would
  // end the process with the file unregistered, and so left behind.
  sigset_t interrupts, previous;
  ::sigemptyset(&interrupts);
  ::sigaddset(&interrupts, SIGINT);
  ::sigaddset(&interrupts, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &interrupts, &previous);
  const int out = ::mkstemp(pattern.data());
  const int make_errno = errno;
  if (out >= 0) {
    path_ = pattern;
    if (on_signal_) on_signal_->remove_on_signal(path_);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (out < 0)
    throw Error(ErrorKind::bad_input, "standard input: cannot make a temporary copy in " + folder.string() + ": " +
                                          std::strerror(make_errno));
  std::vector<char> buffer(1 << 16);
  std::string failure;
  while (failure.empty()) {
    const ssize_t count = ::read(fd, buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) failure = std::string("cannot read it: ") + std::strerror(errno);
    if (count <= 0) break;
    if (!write_all(out, buffer.data(), static_cast<std::size_t>(count)))
      failure = "cannot copy it to " + path_ + ": " + std::strerror(errno);
  }
  if (::close(out) != 0 && failure.empty()) failure = "cannot copy it to " + path_ + ": " + std::strerror(errno);
  if (!failure.empty()) {
    ::unlink(path_.c_str());
    if (on_signal_) on_signal_->remove_on_signal({});
    throw Error(ErrorKind::bad_input, "standard input: " + failure);
  }
}

StdinCopy::~StdinCopy() {
  ::unlink(path_.c_str());
  if (on_signal_) on_signal_->remove_on_signal({});
}

}  // namespace cuconv::cli
