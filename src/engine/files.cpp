// SPDX-License-Identifier: Apache-2.0
// The file system of this process as engine::Files (files.hpp): what single-image and batch mode
// use when no server runs them. Writing is the codec layer's atomic write (image_io.cpp).
#include "engine/files.hpp"

#include "common/anonymous_file.hpp"

#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace cuconv::engine {

namespace fs = std::filesystem;

namespace {

class LocalFiles final : public Files {
 public:
  OpenedFile open_input(const std::string& path) override {
    // The readers open the path themselves (OpenCV, libjpeg, libtiff, exiv2) and say why one
    // cannot be read; opening it here too would block on a FIFO.
    return OpenedFile(-1, path);
  }

  FileKind kind(const std::string& path, bool follow_links) override {
    std::error_code ec;
    const fs::file_status status = follow_links ? fs::status(path, ec) : fs::symlink_status(path, ec);
    switch (status.type()) {
      case fs::file_type::not_found:
      case fs::file_type::none:
        return FileKind::none;
      case fs::file_type::regular:
        return FileKind::regular;
      case fs::file_type::directory:
        return FileKind::directory;
      case fs::file_type::symlink:
        return FileKind::symlink;
      default:
        return ec ? FileKind::none : FileKind::other;
    }
  }

  FileStatus status(const std::string& path) override {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return FileStatus{errno == 0 ? EIO : errno};
    return FileStatus{0, file_kind_of(info.st_mode), static_cast<std::uint64_t>(info.st_dev),
                      static_cast<std::uint64_t>(info.st_ino)};
  }

  bool same_file(const std::string& a, const std::string& b) override {
    std::error_code ec;
    return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
  }

  std::vector<std::string> list_directory(const std::string& path) override {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec) throw Error(ErrorKind::bad_input, path + ": cannot list the directory: " + ec.message());
    return names;
  }

  void make_directories(const std::string& path) override {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) throw Error(ErrorKind::output, path + ": cannot create the output folder: " + ec.message());
    if (!fs::is_directory(path, ec)) throw Error(ErrorKind::output, path + ": not a folder");
  }

  bool write_output(const std::string& output, std::span<const unsigned char> bytes, bool overwrite) override {
    try {
      write_encoded_atomic(output, bytes, overwrite);
    } catch (const Error&) {
      // The no-replace publish found the name taken (another process finished first).
      if (!overwrite && kind(output, false) != FileKind::none) return false;
      throw;
    }
    return true;
  }

  void remove(const std::string& path) noexcept override {
    std::error_code ignored;
    fs::remove(path, ignored);
  }

  OpenedFile create_scratch(const std::string& folder) override {
    const int fd = make_scratch_file(folder);
    if (fd < 0)
      throw Error(ErrorKind::bad_input, "cannot make a temporary copy in " + folder + ": " + std::strerror(errno));
    return OpenedFile(fd, common::descriptor_path(fd));
  }
};

}  // namespace

std::string working_folder() {
  std::error_code ec;
  std::string folder = fs::current_path(ec).string();
  return ec ? std::string() : folder;
}

Files& local_files() {
  static LocalFiles files;
  return files;
}

}  // namespace cuconv::engine
