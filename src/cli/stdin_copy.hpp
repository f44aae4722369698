// SPDX-License-Identifier: Apache-2.0
#pragma once
// Standard input ("-" as INPUT) copied to a private temporary file, so that read_image's checks
// (the header's size against --max-pixels, truncation) apply to it as to any file.
#include "cli/interrupt.hpp"
#include "engine/files.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace cuconv::cli {

/// Copies everything readable from `fd` into a temporary file without a name in `folder`
/// (Files::create_scratch: the caller's file system, also when served), so nothing of it is left
/// when the object ends or the process is killed. For the object's whole life SIGINT, SIGTERM and
/// SIGHUP end the process with 128 + the signal and a line saying so (RemoveOnSignal; an
/// InterruptGuard made later, around the write of the output, takes over while it lives). Throws
/// Error{bad_input} naming standard input when the file cannot be made, `fd` cannot be read, or
/// the copy cannot be written (disk full, a file size limit).
class StdinCopy {
 public:
  /// `on_signals` false: no signal handling (a served command: signals reach its client).
  StdinCopy(int fd, const std::filesystem::path& folder, bool on_signals = true,
            engine::Files& files = engine::local_files());
  StdinCopy(const StdinCopy&) = delete;
  StdinCopy& operator=(const StdinCopy&) = delete;

  /// Where readers open the copy (/proc/self/fd/N).
  [[nodiscard]] const std::string& path() const { return file_.local_path(); }

 private:
  std::optional<RemoveOnSignal> on_signal_;
  engine::OpenedFile file_;
};

}  // namespace cuconv::cli
