// SPDX-License-Identifier: Apache-2.0
#pragma once
// Temporary files without a name (O_TMPFILE) until they are finished: a process killed at any
// moment leaves nothing behind, because the kernel frees a file no name and no descriptor holds.
// A finished file gets its name with linkat(2) through /proc/self/fd, which refuses an existing
// name as atomically as rename's RENAME_NOREPLACE. Shared by the in-process write (codec), the
// copy of standard input (cli) and the served client (serve), which links only libc.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

namespace cuconv::common {

/// An anonymous file in `folder`, open for reading and writing, mode 0600; -1 with errno set when
/// it cannot be made. errno is EOPNOTSUPP or EISDIR where the file system (or kernel) has no
/// O_TMPFILE (anonymous_unsupported): the caller then falls back to a named temporary file.
inline int open_anonymous(const std::string& folder) noexcept {
  return ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/// Whether open_anonymous's errno means "no O_TMPFILE here" rather than a real failure.
[[nodiscard]] inline bool anonymous_unsupported(int error) noexcept { return error == EOPNOTSUPP || error == EISDIR; }

/// The path through which the kernel links descriptor `fd`'s file.
[[nodiscard]] inline std::string descriptor_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

/// Gives the anonymous file open as `fd` the name `target`; 0, or the errno (EEXIST when `target`
/// exists: nothing is replaced).
[[nodiscard]] inline int link_anonymous(int fd, const std::string& target) {
  return ::linkat(AT_FDCWD, descriptor_path(fd).c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
}

/// Gives the anonymous file open as `fd` the name `target`, replacing what is there: linked first
/// to a unique name from `pattern` (ending in XXXXXX, beside `target`), then renamed over `target`.
/// 0, or the errno; the unique name is gone either way.
[[nodiscard]] inline int replace_with_anonymous(int fd, const std::string& target, std::string pattern) {
  static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::size_t x = pattern.rfind("XXXXXX");
  if (x == std::string::npos) return EINVAL;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  std::uint64_t state = static_cast<std::uint64_t>(now.tv_nsec) ^ (static_cast<std::uint64_t>(::getpid()) << 32) ^
                        reinterpret_cast<std::uintptr_t>(&pattern);
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (std::size_t i = 0; i < 6; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // a 64-bit LCG step
      pattern[x + i] = kLetters[(state >> 33) % (sizeof kLetters - 1)];
    }
    const int linked = link_anonymous(fd, pattern);
    if (linked == EEXIST) continue;
    if (linked != 0) return linked;
    if (std::rename(pattern.c_str(), target.c_str()) == 0) return 0;
    const int error = errno;
    ::unlink(pattern.c_str());
    return error;
  }
  return EEXIST;
}

}  // namespace cuconv::common
