// SPDX-License-Identifier: Apache-2.0
#pragma once
// The engine's only way to the file system: every path a command names is opened, listed, checked
// and published through a Files object. In-process it is the file system itself (local_files());
// under `cuconv serve` it is the client, which opens the paths with its own rights and passes the
// descriptors (SCM_RIGHTS), so the server never opens a path a client named (docs/serve.md).
// Reading functions take the returned local path (/proc/self/fd/N under the server); messages name
// the path the user gave.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace cuconv::engine {

/// What is at a path, without following a final symbolic link unless asked.
enum class FileKind { none, regular, directory, symlink, other };

/// The FileKind of a stat(2) st_mode.
[[nodiscard]] inline FileKind file_kind_of(unsigned int mode) noexcept {
  return S_ISREG(mode)   ? FileKind::regular
         : S_ISDIR(mode) ? FileKind::directory
         : S_ISLNK(mode) ? FileKind::symlink
                         : FileKind::other;
}

/// What stat(2) says of a path, links followed (Files::status).
struct FileStatus {
  int error = 0;  ///< 0: it is there; else stat's errno (ENOENT, ENOTDIR, ELOOP, EACCES ...)
  FileKind kind = FileKind::none;
  std::uint64_t device = 0;  ///< with `inode`, the file's identity (through links and bind mounts)
  std::uint64_t inode = 0;
};

/// A file opened for the engine: a descriptor it owns and a path the engine's readers can open
/// (the path itself in-process, /proc/self/fd/N when the descriptor came from a client).
class OpenedFile {
 public:
  OpenedFile() = default;
  OpenedFile(int fd, std::string local_path) : fd_(fd), local_path_(std::move(local_path)) {}
  OpenedFile(OpenedFile&& other) noexcept;
  OpenedFile& operator=(OpenedFile&& other) noexcept;
  OpenedFile(const OpenedFile&) = delete;
  OpenedFile& operator=(const OpenedFile&) = delete;
  ~OpenedFile();  ///< closes the descriptor; never throws

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& local_path() const noexcept { return local_path_; }

 private:
  int fd_ = -1;
  std::string local_path_;
};

class Files {
 public:
  virtual ~Files() = default;
  /// `path` opened for reading; Error{bad_input} naming `path` when it cannot be.
  [[nodiscard]] virtual OpenedFile open_input(const std::string& path) = 0;
  [[nodiscard]] virtual FileKind kind(const std::string& path, bool follow_links) = 0;
  /// stat(2) of `path`, links followed: why it cannot be reached, or its kind and identity.
  [[nodiscard]] virtual FileStatus status(const std::string& path) = 0;
  /// Whether two existing paths are the same file (device and inode).
  [[nodiscard]] virtual bool same_file(const std::string& a, const std::string& b) = 0;
  /// The names (not paths) in a directory, unsorted; Error{bad_input} when it cannot be listed.
  [[nodiscard]] virtual std::vector<std::string> list_directory(const std::string& path) = 0;
  /// Creates `path` and its missing parents (mkdir -p); Error{output} naming it when it cannot.
  virtual void make_directories(const std::string& path) = 0;
  /// Writes `bytes` as `output` atomically: a temporary file beside it, synced, then renamed, so no
  /// partial output is ever seen. Without `overwrite` an existing output, also one that appears
  /// meanwhile, is never replaced: returns false then. Error{output} naming `output` otherwise.
  [[nodiscard]] virtual bool write_output(const std::string& output, std::span<const unsigned char> bytes,
                                          bool overwrite) = 0;
  /// Removes the file `path` if it exists; never throws.
  virtual void remove(const std::string& path) noexcept = 0;
  /// A temporary file without a name in `folder` (O_TMPFILE, or made and unlinked at once), open
  /// for reading and writing: the copy of standard input, which nothing can leave behind, not
  /// even a killed process. Error{bad_input} "cannot make a temporary copy in FOLDER: why". The
  /// base has none to give (a test's stand-in); the local and the client's file systems do.
  [[nodiscard]] virtual OpenedFile create_scratch(const std::string& folder);
  /// The caller's file size limit (RLIMIT_FSIZE, `ulimit -f`) in bytes where this process's kernel
  /// does not apply it, for what the command writes on the caller's behalf (the copy of standard
  /// input, standard output): a served command's client's; 0 in-process, where the kernel does.
  [[nodiscard]] virtual std::uint64_t file_size_limit() const noexcept { return 0; }
};

/// The file system of this process.
[[nodiscard]] Files& local_files();

/// This process's working folder (getcwd), where local_files() starts relative paths; empty when
/// it cannot be had (removed, too long).
[[nodiscard]] std::string working_folder();

/// create_scratch's file in this process's file system: its descriptor, or -1 with errno set.
[[nodiscard]] int make_scratch_file(const std::string& folder) noexcept;

}  // namespace cuconv::engine
