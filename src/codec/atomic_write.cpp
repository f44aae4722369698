// SPDX-License-Identifier: Apache-2.0
// The atomic write of an encoded image (image_io.hpp): an anonymous temporary file beside the
// target, its bytes synced, then linked into place (no replace unless asked), so a reader never
// sees half a file and a killed process leaves none.
#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include "common/anonymous_file.hpp"
#include "common/write_all.hpp"

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

namespace cuconv {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

/// The process umask, read once during static initialisation (before main starts threads):
/// umask() can only be read by setting it, which would race with files other threads create.
const mode_t kProcessUmask = [] {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}();

/// Moves the finished temporary file to `target` without replacing an existing file:
/// renameat2(RENAME_NOREPLACE), or link() + unlink() where the file system lacks it. Returns
/// false with errno set (EEXIST when `target` exists).
bool rename_no_replace(const std::string& temp, const std::string& target) {
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS) return false;
  if (::link(temp.c_str(), target.c_str()) != 0) return false;
  ::unlink(temp.c_str());
  return true;
}

}  // namespace

void write_image_atomic(const std::string& path, const cv::Mat& image, const WriteOptions& options) {
  write_encoded_atomic(path, encode_image(path, image, options), options.overwrite);
}

bool is_temp_file_name(const std::string& path) {
  return fs::path(path).filename().string().starts_with(kTempFilePrefix);
}

std::string temp_file_name(const std::string& output_name) {
  // mkstemp's suffix; the prefix and the suffix cost 19 bytes, so a long output name is cut (at a
  // UTF-8 character boundary, so the name stays readable) to keep the whole within NAME_MAX.
  constexpr std::string_view kSuffix = ".XXXXXX";
  constexpr std::size_t kNameMax = 255;  // NAME_MAX of Linux file systems
  const std::size_t room = kNameMax - kTempFilePrefix.size() - kSuffix.size();
  std::size_t kept = std::min(output_name.size(), room);
  while (kept > 0 && kept < output_name.size() && (static_cast<unsigned char>(output_name[kept]) & 0xC0) == 0x80)
    --kept;  // output_name[kept] continues a character: cut before the character starts
  return std::string(kTempFilePrefix) + output_name.substr(0, kept) + std::string(kSuffix);
}

void write_encoded_atomic(const std::string& path, std::span<const unsigned char> encoded, bool overwrite) {
  // Temporary file next to the target, so the final link or rename stays on one file system. An
  // anonymous one where the file system has them: a process killed while writing leaves nothing.
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string pattern = (dir / temp_file_name(target.filename().string())).string();
  std::string temp;  // the fallback's named temporary file; empty for an anonymous one
  int fd = common::open_anonymous(dir.string());
  if (fd < 0 && common::anonymous_unsupported(errno)) {
    temp = pattern;
    fd = ::mkostemp(temp.data(), O_CLOEXEC);
  }
  if (fd < 0) throw Error(ErrorKind::output, path + ": cannot create a file in " + dir.string() + ": " + errno_text());
  // The file is made 0600; a finished image gets the permissions any new file would get.
  const bool written = ::fchmod(fd, 0666 & ~kProcessUmask) == 0 && common::write_all(fd, encoded) && ::fsync(fd) == 0;
  const int write_errno = written ? 0 : errno;
  int move_errno = 0;
  if (written && temp.empty()) {
    move_errno = overwrite ? common::replace_with_anonymous(fd, path, pattern) : common::link_anonymous(fd, path);
  }
  const bool closed = ::close(fd) == 0;
  if (!written || (!temp.empty() && !closed)) {
    const int failure = written ? errno : write_errno;
    if (!temp.empty()) ::unlink(temp.c_str());
    std::string reason = std::strerror(failure);
    // With SIGXFSZ ignored (cli::ignore_file_size_signal), the file size limit is an EFBIG here.
    if (failure == EFBIG) reason += " (the process's file size limit, ulimit -f)";
    throw Error(ErrorKind::output, path + ": write failed: " + reason);
  }
  if (!temp.empty()) {
    const bool moved = overwrite ? ::rename(temp.c_str(), path.c_str()) == 0 : rename_no_replace(temp, path);
    move_errno = moved ? 0 : errno;
    if (!moved) ::unlink(temp.c_str());
  }
  if (move_errno != 0) {
    if (!overwrite && move_errno == EEXIST)
      throw Error(ErrorKind::output, path + ": exists; not replaced (overwrite is off)");
    throw Error(ErrorKind::output, path + ": cannot move the finished file into place: " + std::strerror(move_errno));
  }
}

}  // namespace cuconv
