// SPDX-License-Identifier: Apache-2.0
#pragma once
// The served client's side of the file operations a server asks for (OpenInput, KindQuery,
// CreateTemp, Publish ...): performed with the client's own rights, from its working folder, and
// limited to files of this command.
#include "serve/channel.hpp"
#include "serve/protocol.hpp"

#include "common/anonymous_file.hpp"
#include "engine/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace cuconv::serve {

/// The folder of `output` and the name pattern of a temporary file beside it. A long output name
/// is cut so the temporary name stays within NAME_MAX.
inline std::pair<std::string, std::string> temp_pattern(const std::string& output) {
  const auto slash = output.find_last_of('/');
  std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : output.substr(0, slash);
  const std::string base = (slash == std::string::npos ? output : output.substr(slash + 1)).substr(0, 200);
  std::string pattern = (folder == "/" ? "" : folder) + "/.cuconv-tmp-" + base + ".XXXXXX";
  return {std::move(folder), std::move(pattern)};
}

/// The client's side of the file operations: the paths are this process's, relative ones from its
/// working folder. It creates, publishes, removes and discards only files of this command: its
/// temporary files (anonymous where the file system allows, so a client killed at any moment
/// leaves none) until published or discarded, and the outputs it published; a server asking for
/// anything else is refused, whatever it says.
class FileServant {
 public:
  FileServant() : umask_(::umask(0)) { ::umask(umask_); }  // read once, before any thread could race
  ~FileServant() { remove_temporaries(); }

  void remove_temporaries() noexcept {
    for (const auto& [name, temp] : temporaries_)
      if (!temp.path.empty()) ::unlink(temp.path.c_str());
    temporaries_.clear();
  }

  /// Answers `message`; false when the channel failed.
  bool answer(Channel& channel, const Message& message) {
    if (const auto* m = std::get_if<OpenInput>(&message)) {
      // O_NONBLOCK: a FIFO without a writer must not hang the open (the server refuses anything
      // but a regular file, as in-process); reads stay blocking.
      UniqueFd fd(::open(m->path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
      if (!fd) return channel.send(failure(errno));
      ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
      return send_fd(channel, Reply{}, fd.get());
    }
    if (const auto* m = std::get_if<KindQuery>(&message)) {
      struct stat st {};
      const int rc = m->follow_links ? ::stat(m->path.c_str(), &st) : ::lstat(m->path.c_str(), &st);
      Reply reply;
      reply.value = rc != 0 ? 0u : S_ISREG(st.st_mode) ? 1u : S_ISDIR(st.st_mode) ? 2u : S_ISLNK(st.st_mode) ? 3u : 4u;
      // Files::status: why the path cannot be reached, or the file's identity ("DEV:INODE").
      if (rc != 0)
        reply.error = errno == 0 ? EIO : errno;
      else
        reply.name = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
      return channel.send(reply);
    }
    if (const auto* m = std::get_if<SameFile>(&message)) {
      struct stat a {
      }, b{};
      Reply reply;
      reply.value = ::stat(m->a.c_str(), &a) == 0 && ::stat(m->b.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
                    a.st_ino == b.st_ino;
      return channel.send(reply);
    }
    if (const auto* m = std::get_if<ListDirectory>(&message)) return list(channel, m->path);
    if (const auto* m = std::get_if<CreateTemp>(&message)) return create_temp(channel, m->output);
    if (const auto* m = std::get_if<CreateScratch>(&message)) {
      // The copy of standard input, in the caller's temporary folder: anonymous, so nothing of it
      // outlives the command, whoever is killed.
      const UniqueFd fd(engine::make_scratch_file(m->folder));
      if (!fd) return channel.send(failure(errno));
      return send_fd(channel, Reply{}, fd.get());
    }
    if (const auto* m = std::get_if<Publish>(&message)) return channel.send(publish(*m));
    if (const auto* m = std::get_if<MakeDirectories>(&message)) {
      std::error_code ec;
      std::filesystem::create_directories(m->path, ec);
      if (ec) return channel.send(failure(ec.value()));
      if (!std::filesystem::is_directory(m->path, ec)) return channel.send(failure(ENOTDIR));
      return channel.send(Reply{});
    }
    if (const auto* m = std::get_if<RemoveFile>(&message)) {
      // Only an output this command published (the summary a failed batch leaves empty).
      if (published_.erase(m->path) == 0) return channel.send(refusal(m->path + " is not an output of this command"));
      struct stat st {};
      if (::lstat(m->path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(m->path.c_str());
      return channel.send(Reply{});
    }
    if (const auto* m = std::get_if<Discard>(&message)) {
      const auto temp = temporaries_.find(m->temp_name);
      if (temp == temporaries_.end())
        return channel.send(refusal(m->temp_name + " is not a temporary file of this command"));
      if (!temp->second.path.empty()) ::unlink(temp->second.path.c_str());
      temporaries_.erase(temp);
      return channel.send(Reply{});
    }
    return false;
  }

 private:
  /// A temporary file of this command: its descriptor, and its path when it has one (a file
  /// system without O_TMPFILE); an anonymous one goes with its descriptor.
  struct Temp {
    UniqueFd fd;
    std::string path;
  };

  static Reply failure(int error) {
    Reply reply;
    reply.error = error == 0 ? EIO : error;
    reply.message = std::strerror(reply.error);
    return reply;
  }
  static Reply refusal(std::string why) {
    Reply reply = failure(EPERM);
    reply.message = std::move(why);
    return reply;
  }
  static bool send_fd(Channel& channel, const Reply& reply, int fd) {
    return channel.send(reply, std::span<const int>(&fd, 1));
  }

  static bool list(Channel& channel, const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return channel.send(failure(errno));
    Reply chunk;
    std::size_t bytes = 0;
    errno = 0;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (bytes + name.size() + 4 > kListChunkBytes) {
        chunk.more = true;
        if (!channel.send(chunk)) {
          ::closedir(dir);
          return false;
        }
        chunk = Reply{};
        bytes = 0;
      }
      bytes += name.size() + 4;
      chunk.names.push_back(name);
    }
    const int error = errno;
    ::closedir(dir);
    if (error != 0) return channel.send(failure(error));
    chunk.more = false;
    return channel.send(chunk);
  }

  bool create_temp(Channel& channel, const std::string& output) {
    auto [folder, pattern] = temp_pattern(output);
    Temp temp;
    temp.fd.reset(common::open_anonymous(folder));
    // The server knows a temporary file by a name: an anonymous one's says which it is.
    std::string name = folder + "/(anonymous temporary file " + std::to_string(++anonymous_count_) + ")";
    if (!temp.fd && common::anonymous_unsupported(errno)) {
      temp.fd.reset(::mkostemp(pattern.data(), O_CLOEXEC));
      temp.path = name = pattern;
    }
    if (!temp.fd) return channel.send(failure(errno));
    const int raw = temp.fd.get();
    // 0600 while the server writes it; publish gives it the mode a new file of the user's gets.
    temporaries_.emplace(name, std::move(temp));
    Reply reply;
    reply.name = name;
    return send_fd(channel, reply, raw);
  }

  Reply publish(const Publish& m) {
    const auto found = temporaries_.find(m.temp_name);
    if (found == temporaries_.end()) return refusal(m.temp_name + " is not a temporary file of this command");
    Temp& temp = found->second;
    // An output gets the mode any new file of the user's would (umask), as in-process.
    ::fchmod(temp.fd.get(), 0666 & ~umask_);
    int error = 0;
    if (temp.path.empty()) {
      error = m.overwrite ? common::replace_with_anonymous(temp.fd.get(), m.output, temp_pattern(m.output).second)
                          : common::link_anonymous(temp.fd.get(), m.output);
    } else if (m.overwrite) {
      if (::rename(temp.path.c_str(), m.output.c_str()) != 0) error = errno;
    } else if (::renameat2(AT_FDCWD, temp.path.c_str(), AT_FDCWD, m.output.c_str(), RENAME_NOREPLACE) != 0) {
      error = errno;
      // A file system without RENAME_NOREPLACE: link() refuses an existing name just as atomically.
      if (error == EINVAL || error == ENOSYS) error = ::link(temp.path.c_str(), m.output.c_str()) == 0 ? 0 : errno;
      if (error == 0 || error == EEXIST) ::unlink(temp.path.c_str());
    }
    // Without overwrite an existing output stays (value 0); any other failure keeps the temporary
    // file for remove_temporaries.
    if (error != 0 && (error != EEXIST || m.overwrite)) return failure(error);
    Reply reply;
    reply.value = error == 0 ? 1 : 0;
    if (error == 0) published_.insert(m.output);
    temporaries_.erase(found);
    return reply;
  }

  mode_t umask_;
  std::map<std::string, Temp> temporaries_;
  std::set<std::string> published_;  ///< outputs this command published (RemoveFile may name them)
  unsigned anonymous_count_ = 0;
};

}  // namespace cuconv::serve
