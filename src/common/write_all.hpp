// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one loop that writes a whole text to a descriptor (short writes and EINTR retried), and the
// one that reads a descriptor to its end.
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <span>
#include <string_view>

namespace cuconv::common {

/// Writes all of `text` to `fd`; false when a write fails (errno says why) or makes no progress
/// (errno EIO).
inline bool write_all(int fd, std::string_view text) noexcept {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// The same for bytes.
inline bool write_all(int fd, std::span<const unsigned char> bytes) noexcept {
  return write_all(fd, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

/// Reads `fd` to its end through `buffer`, handing each chunk read to `take(std::string_view)`
/// (EINTR retried). Returns 0 at the end of the file, else the errno of the read that failed.
template <class Take>
int read_to_end(int fd, std::span<char> buffer, Take&& take) {
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    take(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
}

}  // namespace cuconv::common
