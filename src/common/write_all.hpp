// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one loop that writes a whole text to a descriptor (short writes and EINTR retried).
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string_view>

namespace cuconv::common {

/// Writes all of `text` to `fd`; false when a write fails or makes no progress.
inline bool write_all(int fd, std::string_view text) noexcept {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace cuconv::common
