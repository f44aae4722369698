// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file error.hpp
/// One error type for the whole library: every failure is a cuconv::Error whose kind maps to one
/// documented process exit code. No CUDA headers here: the GPU-specific subclass lives in src/.
#include <stdexcept>
#include <string>

namespace cuconv {

/// Process exit codes (documented in README "Exit codes").
enum class ExitCode : int {
  ok = 0,
  internal = 1,            ///< a bug or an unexpected exception
  usage = 2,               ///< bad command line: unknown option, bad value, conflicting options
  bad_input = 3,           ///< input image or filter cannot be read, parsed or is unsupported
  output = 4,              ///< output cannot be written, or its format cannot hold the result
  gpu = 5,                 ///< GPU variant requested without a usable device, or a CUDA failure
  compare_mismatch = 6,    ///< --compare: the GPU result is outside the documented tolerance
  some_inputs_failed = 7,  ///< batch mode: at least one input failed, the others were still attempted
  not_started = 8,  ///< `cuconv serve`: cannot start (another server on the socket, an unsafe socket path or folder)
};

/// What went wrong, in the terms the exit code reports.
enum class ErrorKind { usage, bad_input, output, gpu, internal };

[[nodiscard]] constexpr ExitCode exit_code_for(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::usage:
      return ExitCode::usage;
    case ErrorKind::bad_input:
      return ExitCode::bad_input;
    case ErrorKind::output:
      return ExitCode::output;
    case ErrorKind::gpu:
      return ExitCode::gpu;
    case ErrorKind::internal:
      return ExitCode::internal;
  }
  return ExitCode::internal;
}

/// The library's only exception type. The message is complete and user-facing: it names the file
/// (and line, for filter files) and the problem.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace cuconv
