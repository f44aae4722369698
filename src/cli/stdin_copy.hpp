// SPDX-License-Identifier: Apache-2.0
#pragma once
// Standard input ("-" as INPUT) copied to a private temporary file, so that read_image's checks
// (the header's size against --max-pixels, truncation) apply to it as to any file.
#include "cli/interrupt.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace cuconv::cli {

/// Copies everything readable from `fd` into a new file `folder`/cuconv-stdin-XXXXXX (mode 0600),
/// removed when the object ends. For the object's whole life SIGINT and SIGTERM remove the file
/// and end the process with 130 / 143 (RemoveOnSignal; an InterruptGuard made later, around the
/// write of the output, takes over while it lives), so an interrupted copy or filter leaves
/// nothing in the temporary folder. Throws Error{bad_input} naming standard input and the
/// temporary file when the file cannot be made, `fd` cannot be read, or the copy cannot be
/// written (disk full, a file size limit); no file is left then.
class StdinCopy {
 public:
  /// `on_signals` false: no signal handling (a served command: signals reach its client).
  StdinCopy(int fd, const std::filesystem::path& folder, bool on_signals = true);
  ~StdinCopy();
  StdinCopy(const StdinCopy&) = delete;
  StdinCopy& operator=(const StdinCopy&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::optional<RemoveOnSignal> on_signal_;
  std::string path_;
};

}  // namespace cuconv::cli
