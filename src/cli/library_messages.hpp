// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the image libraries print on their own: libpng's and libjpeg's warnings and OpenCV's
// imread notes go straight to stderr (file descriptor 2), past cuconv's logging. While a
// LibraryMessages is alive, descriptor 2 is a pipe that cuconv reads: those lines become cuconv
// log lines (each at -v, one summary line by default, none with -q), and anything else that
// arrives there is passed on to the terminal unchanged.
#include <spdlog/logger.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <thread>

namespace cuconv::cli {

/// The process's real stderr, kept apart from descriptor 2 at the first call (call it before a
/// LibraryMessages exists): cuconv's logger and the batch progress line write here.
[[nodiscard]] std::FILE* terminal_stderr();

/// Whether `line` is one of the image libraries' own messages (libpng, libjpeg, libtiff, OpenCV).
[[nodiscard]] bool is_library_message(std::string_view line);

/// Captures descriptor 2 while alive (see the file comment). `show_each`: log every message at
/// info level as it arrives (-v); otherwise the destructor logs one warning that counts them and
/// quotes the first (hidden by -q like every warning). Not under AddressSanitizer, whose reports
/// must reach the terminal even when the process dies. One at a time.
class LibraryMessages {
 public:
  LibraryMessages(bool show_each, spdlog::logger& log);
  ~LibraryMessages();
  LibraryMessages(const LibraryMessages&) = delete;
  LibraryMessages& operator=(const LibraryMessages&) = delete;

 private:
  void read_lines(int fd);

  bool show_each_;
  spdlog::logger& log_;
  bool active_ = false;
  std::thread reader_;
  std::size_t count_ = 0;  ///< library messages seen; written by the reader, read after join
  std::string first_;
};

}  // namespace cuconv::cli
