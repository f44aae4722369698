// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fuzzer's bytes as a file, for parsers that take a path (the header walk, exiv2): one
// anonymous in-memory file per process (memfd), rewritten for every input and named through
// /proc/self/fd.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace cuconv::fuzz {

/// The path of an in-memory file that holds exactly `data` until the next call.
inline const std::string& as_file(const std::uint8_t* data, std::size_t size, const char* extension = "") {
  static const int fd = ::memfd_create("cuconv-fuzz", 0);
  static std::string path;
  if (fd < 0) std::abort();
  if (::ftruncate(fd, 0) != 0) std::abort();
  std::size_t written = 0;
  while (written < size) {
    const ssize_t n = ::pwrite(fd, data + written, size - written, static_cast<off_t>(written));
    if (n <= 0) std::abort();
    written += static_cast<std::size_t>(n);
  }
  // A name with the extension (exiv2 and the writers look at it), through a symlink to the fd.
  if (path.empty()) {
    path = "/tmp/cuconv-fuzz-" + std::to_string(::getpid()) + extension;
    ::unlink(path.c_str());
    if (::symlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), path.c_str()) != 0) std::abort();
    std::atexit([] { ::unlink(path.c_str()); });
  }
  return path;
}

}  // namespace cuconv::fuzz
