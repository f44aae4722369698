// SPDX-License-Identifier: Apache-2.0
// engine::Files answered by a served client (see server.hpp): the server sends each file
// operation over the connection and the client performs it with its own rights; descriptors come
// back with the answers and are read or written here as /proc/self/fd/N.
#include "serve/server.hpp"

#include "common/anonymous_file.hpp"
#include "common/write_all.hpp"

#include <poll.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace cuconv::serve {

Reply RemoteFiles::ask(const Message& question, const std::string& path, ErrorKind error_kind) {
  // Called with mutex_ held: one question and its answer at a time on the connection. A
  // descriptor left by an earlier answer that should have had none must not pass for this one's.
  channel_.drop_fds();
  if (!lost_ && channel_.send(question)) {
    Received answer = receive_answer();
    if (answer.status == Received::Status::message && std::holds_alternative<Reply>(answer.message)) {
      return std::get<Reply>(std::move(answer.message));
    }
    if (answer.status == Received::Status::message) {
      answer.error = std::string("the client answered out of turn");
    }
    if (!answer.error.empty()) {
      lost_ = true;
      throw Error(error_kind, path + ": the client's connection failed: " + answer.error);
    }
  }
  lost_ = true;
  throw Error(error_kind, path + ": the client went away");
}

engine::OpenedFile RemoteFiles::open_input(const std::string& path) {
  std::lock_guard lock(mutex_);
  // The copy of standard input is this server's already (create_scratch): read where it is.
  if (scratch_paths_.count(path) != 0) return engine::OpenedFile(-1, path);
  const Reply reply = ask(OpenInput{path}, path, ErrorKind::bad_input);
  // The words read_image uses for the same failures in a process of its own.
  if (reply.error == ENOENT || reply.error == ENOTDIR) throw Error(ErrorKind::bad_input, path + ": no such file");
  if (reply.error == EACCES) throw Error(ErrorKind::bad_input, path + ": cannot read: " + reply.message);
  if (reply.error == ELOOP)
    throw Error(ErrorKind::bad_input, path + ": cannot open: " + reply.message + " (a symbolic link loop)");
  if (reply.error != 0) throw Error(ErrorKind::bad_input, path + ": cannot open: " + reply.message);
  UniqueFd fd = channel_.take_fd();
  if (!fd) throw Error(ErrorKind::bad_input, path + ": the client sent no descriptor for it");
  const int raw = fd.release();
  return engine::OpenedFile(raw, common::descriptor_path(raw));
}

engine::FileKind RemoteFiles::kind(const std::string& path, bool follow_links) {
  std::lock_guard lock(mutex_);
  const Reply reply = ask(KindQuery{path, follow_links}, path, ErrorKind::bad_input);
  if (reply.value > static_cast<std::uint32_t>(engine::FileKind::other)) {
    throw Error(ErrorKind::bad_input, path + ": the client answered an unknown file kind");
  }
  return static_cast<engine::FileKind>(reply.value);
}

engine::FileStatus RemoteFiles::status(const std::string& path) {
  std::lock_guard lock(mutex_);
  // A Kind query following links: the client answers stat's errno, the kind and "DEV:INODE".
  const Reply reply = ask(KindQuery{path, true}, path, ErrorKind::bad_input);
  if (reply.error != 0) return engine::FileStatus{reply.error};
  engine::FileStatus status;
  if (reply.value > static_cast<std::uint32_t>(engine::FileKind::other))
    throw Error(ErrorKind::bad_input, path + ": the client answered an unknown file kind");
  status.kind = static_cast<engine::FileKind>(reply.value);
  const std::size_t colon = reply.name.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument(reply.name);
    status.device = std::stoull(reply.name.substr(0, colon));
    status.inode = std::stoull(reply.name.substr(colon + 1));
  } catch (const std::logic_error&) {
    throw Error(ErrorKind::bad_input, path + ": the client answered no file identity");
  }
  return status;
}

bool RemoteFiles::same_file(const std::string& a, const std::string& b) {
  std::lock_guard lock(mutex_);
  return ask(SameFile{a, b}, a, ErrorKind::bad_input).value != 0;
}

std::vector<std::string> RemoteFiles::list_directory(const std::string& path) {
  std::lock_guard lock(mutex_);
  Reply reply = ask(ListDirectory{path}, path, ErrorKind::bad_input);
  std::vector<std::string> names;
  for (;;) {
    if (reply.error != 0) throw Error(ErrorKind::bad_input, path + ": cannot list the folder: " + reply.message);
    names.insert(names.end(), std::make_move_iterator(reply.names.begin()), std::make_move_iterator(reply.names.end()));
    if (!reply.more) return names;
    Received next = receive_answer();
    if (next.status != Received::Status::message || !std::holds_alternative<Reply>(next.message)) {
      lost_ = true;
      throw Error(ErrorKind::bad_input, path + ": the client went away while listing the folder");
    }
    reply = std::get<Reply>(std::move(next.message));
  }
}

RemoteFiles::TempOutput RemoteFiles::create_temp(const std::string& output) {
  std::lock_guard lock(mutex_);
  const Reply reply = ask(CreateTemp{output}, output, ErrorKind::output);
  if (reply.error != 0) {
    // In-process words (write_encoded_atomic): the folder the file could not be made in.
    const std::size_t slash = output.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : output.substr(0, slash);
    throw Error(ErrorKind::output, output + ": cannot create a file in " + folder + ": " + reply.message);
  }
  UniqueFd fd = channel_.take_fd();
  if (!fd) throw Error(ErrorKind::output, output + ": the client sent no descriptor for its temporary file");
  const int raw = fd.release();
  return TempOutput{engine::OpenedFile(raw, common::descriptor_path(raw)), reply.name};
}

bool RemoteFiles::publish(TempOutput& temp, const std::string& output, bool overwrite) {
  // The data reaches the disk before the name does: a crash after the rename never leaves a
  // truncated output.
  if (::fsync(temp.file.fd()) != 0 && errno != EINVAL) {
    const std::string why = std::strerror(errno);
    discard(temp);
    throw Error(ErrorKind::output, output + ": cannot write: " + why);
  }
  std::lock_guard lock(mutex_);
  const Reply reply = ask(Publish{temp.name, output, overwrite}, output, ErrorKind::output);
  // In-process words (write_encoded_atomic), e.g. for a name the file system refuses.
  if (reply.error != 0)
    throw Error(ErrorKind::output, output + ": cannot move the finished file into place: " + reply.message);
  return reply.value != 0;
}

void RemoteFiles::discard(TempOutput& temp) noexcept {
  try {
    std::lock_guard lock(mutex_);
    (void)ask(Discard{temp.name}, temp.name, ErrorKind::output);
  } catch (...) {
    // The client removes its own temporary files when the connection ends; nothing to add here.
  }
}

engine::OpenedFile RemoteFiles::create_scratch(const std::string& folder) {
  std::lock_guard lock(mutex_);
  const Reply reply = ask(CreateScratch{folder}, folder, ErrorKind::bad_input);
  if (reply.error != 0)
    throw Error(ErrorKind::bad_input, "cannot make a temporary copy in " + folder + ": " + reply.message);
  UniqueFd fd = channel_.take_fd();
  if (!fd) throw Error(ErrorKind::bad_input, folder + ": the client sent no descriptor for its temporary file");
  const int raw = fd.release();
  engine::OpenedFile file(raw, common::descriptor_path(raw));
  scratch_paths_.insert(file.local_path());
  return file;
}

void RemoteFiles::make_directories(const std::string& path) {
  std::lock_guard lock(mutex_);
  const Reply reply = ask(MakeDirectories{path}, path, ErrorKind::output);
  if (reply.error != 0) throw Error(ErrorKind::output, path + ": cannot create the output folder: " + reply.message);
}

bool RemoteFiles::write_output(const std::string& output, std::span<const unsigned char> bytes, bool overwrite) {
  TempOutput temp = create_temp(output);
  if (file_size_limit_ > 0 && bytes.size() > file_size_limit_) {
    discard(temp);
    throw Error(ErrorKind::output,
                output + ": write failed: " + std::strerror(EFBIG) + " (the process's file size limit, ulimit -f)");
  }
  if (!common::write_all(temp.file.fd(), bytes)) {
    const std::string why = std::strerror(errno);
    discard(temp);
    throw Error(ErrorKind::output, output + ": write failed: " + why);
  }
  return publish(temp, output, overwrite);
}

void RemoteFiles::remove(const std::string& path) noexcept {
  try {
    std::lock_guard lock(mutex_);
    (void)ask(RemoveFile{path}, path, ErrorKind::output);
  } catch (...) {
    // Best effort: a summary left empty is the client's to see.
  }
}

Received RemoteFiles::receive_answer(int timeout_ms) {
  for (;;) {
    Received received = channel_.receive(timeout_ms);
    const auto* interrupt =
        received.status == Received::Status::message ? std::get_if<Interrupt>(&received.message) : nullptr;
    if (interrupt == nullptr) return received;
    int none = 0;
    signal_.compare_exchange_strong(none, interrupt->signal > 0 ? interrupt->signal : SIGINT);
  }
}

int RemoteFiles::interrupt_signal() noexcept {
  if (const int signal = signal_.load(); signal != 0) return signal;
  // A file operation in flight holds the lock and reads the connection itself.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return signal_.load();
  int none = 0;
  if (lost_) {
    signal_.compare_exchange_strong(none, SIGHUP);
    return signal_.load();
  }
  // Between file operations the client says nothing but Interrupt; anything else, or its end,
  // means it is gone.
  pollfd p{channel_.fd(), POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return 0;
  try {
    const Received received = receive_answer(0);
    if (received.status != Received::Status::timeout) {
      lost_ = true;
      signal_.compare_exchange_strong(none, SIGHUP);
    }
  } catch (...) {  // out of memory reading a frame: the next file operation fails on its own
  }
  return signal_.load();
}

}  // namespace cuconv::serve
