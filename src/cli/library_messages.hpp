// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the image libraries print on their own: libpng's and libjpeg's warnings and OpenCV's
// imread notes go straight to stderr, past cuconv's logging. While a LibraryMessages is alive
// those lines become the command's log lines (each at -v, one summary line by default, none with
// -q), and anything else printed there is passed on unchanged. A process of its own hears them on
// descriptor 2, made a pipe that cuconv reads; a served command on the threads that run it
// (common/thread_stderr.hpp), since the server's descriptor 2 is no one client's.
#include "common/thread_stderr.hpp"

#include <spdlog/logger.h>

#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace cuconv::cli {

/// The process's real stderr, kept apart from descriptor 2 at the first call (call it before a
/// LibraryMessages exists): cuconv's logger and the batch progress line write here.
[[nodiscard]] std::FILE* terminal_stderr();

/// Whether `line` is one of the image libraries' own messages (libpng, libjpeg, libtiff, OpenCV).
[[nodiscard]] bool is_library_message(std::string_view line);

/// Where a LibraryMessages hears the libraries.
enum class LibraryCapture {
  descriptor_2,  ///< the whole process's descriptor 2 (one at a time; not under AddressSanitizer,
                 ///< whose reports must reach the terminal even when the process dies)
  this_thread,   ///< this thread's stderr and that of the threads it starts, where stderr is routed
                 ///< by thread (common::route_stderr_by_thread, as `cuconv serve` does)
};

/// Captures the libraries' lines while alive (see the file comment). `show_each`: log every
/// message at info level as it arrives (-v); otherwise the destructor logs one warning that counts
/// them and quotes the first (hidden by -q like every warning). Other lines go to `passthrough_fd`
/// (this_thread) or to the terminal (descriptor_2).
class LibraryMessages final : private common::StderrSink {
 public:
  LibraryMessages(bool show_each, spdlog::logger& log, LibraryCapture how = LibraryCapture::descriptor_2,
                  int passthrough_fd = -1);
  ~LibraryMessages() override;
  LibraryMessages(const LibraryMessages&) = delete;
  LibraryMessages& operator=(const LibraryMessages&) = delete;

 private:
  void line(std::string_view text) override;
  void read_lines(int fd);
  void summarise();

  bool show_each_;
  spdlog::logger& log_;
  int passthrough_fd_;
  bool active_ = false;
  std::thread reader_;                             ///< descriptor_2: the pipe's reader
  std::optional<common::ThreadStderrSink> bound_;  ///< this_thread: the binding
  std::mutex mutex_;                               ///< the count and the first, from several threads
  std::size_t count_ = 0;
  std::string first_;
};

}  // namespace cuconv::cli
