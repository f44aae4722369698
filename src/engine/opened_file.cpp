// SPDX-License-Identifier: Apache-2.0
// engine::OpenedFile's ownership of its descriptor and the scratch file both file systems make
// (files.hpp). Apart from files.cpp's local file system so that `cuconv serve`'s transport and
// client (cuconv_serve, libc only) link them without the engine.
#include "engine/files.hpp"

#include "common/anonymous_file.hpp"

#include <cuconv/error.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>
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

OpenedFile Files::create_scratch(const std::string& folder) {
  throw Error(ErrorKind::bad_input, "cannot make a temporary copy in " + folder + ": this file access makes none");
}

int make_scratch_file(const std::string& folder) noexcept {
  const int fd = common::open_anonymous(folder);
  if (fd >= 0 || !common::anonymous_unsupported(errno)) return fd;
  // No O_TMPFILE here: a named file, unlinked at once (a kill in between is the only way to leave it).
  std::string name = folder + "/cuconv-stdin-XXXXXX";
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(name.c_str());
  return named;
}

}  // namespace cuconv::engine
