// SPDX-License-Identifier: Apache-2.0
// engine::OpenedFile's ownership of its descriptor (files.hpp). Apart from files.cpp's local file
// system so that `cuconv serve`'s transport (cuconv_serve, libc only) links it without the engine.
#include "engine/files.hpp"

#include <unistd.h>
#include <utility>

namespace cuconv::engine {

OpenedFile::OpenedFile(OpenedFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), local_path_(std::move(other.local_path_)) {}

OpenedFile& OpenedFile::operator=(OpenedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    local_path_ = std::move(other.local_path_);
  }
  return *this;
}

OpenedFile::~OpenedFile() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace cuconv::engine
