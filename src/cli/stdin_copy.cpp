// SPDX-License-Identifier: Apache-2.0
// Standard input to a temporary file that no interruption leaves behind.
#include "cli/stdin_copy.hpp"

#include "common/write_all.hpp"

#include <cuconv/error.hpp>

#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <vector>

namespace cuconv::cli {

StdinCopy::StdinCopy(int fd, const std::filesystem::path& folder, bool on_signals, engine::Files& files) {
  if (on_signals) on_signal_.emplace("working on standard input (its temporary copy was removed)");
  try {
    file_ = files.create_scratch(folder.string());
  } catch (const Error& e) {
    throw Error(e.kind(), std::string("standard input: ") + e.what());
  }
  const auto cannot_copy = [&](int error) {
    return Error(ErrorKind::bad_input, "standard input: cannot copy it to a temporary file in " + folder.string() +
                                           ": " + std::strerror(error));
  };
  // Served, the client's file size limit holds for the copy as the kernel holds a process of its own to it.
  const std::uint64_t limit = files.file_size_limit();
  std::uint64_t copied = 0;
  std::vector<char> buffer(1 << 16);
  const int read_error = common::read_to_end(fd, buffer, [&](std::string_view chunk) {
    if (limit > 0 && copied + chunk.size() > limit) throw cannot_copy(EFBIG);
    if (!common::write_all(file_.fd(), chunk)) throw cannot_copy(errno);
    copied += chunk.size();
  });
  if (read_error != 0)
    throw Error(ErrorKind::bad_input, std::string("standard input: cannot read it: ") + std::strerror(read_error));
  // Served, Ctrl-C ends the producer of standard input and the client together: one round trip to
  // the client after the end of input lets the Interrupt it sends first arrive before the command
  // decodes a truncated copy (the caller then sees the interruption, as in-process).
  if (!on_signals) (void)files.kind(folder.string(), true);
}

}  // namespace cuconv::cli
