#pragma once
// One command's surroundings: where its text goes and how it reaches files. main() runs a command
// in a local session (this process's descriptors and file system); `cuconv serve` runs each
// client's command in a session of that client (its descriptors, its file access through the
// socket), so both run the same code (cli::run_command).
#include "engine/files.hpp"

#include <string>
#include <vector>

namespace cuconv::cli {

struct Session {
  int in_fd = 0;             ///< standard input of the command
  int out_fd = 1;            ///< standard output
  int err_fd = 2;            ///< standard error (messages)
  bool err_is_terminal = false;  ///< colours in messages
  engine::Files* files = nullptr;  ///< nullptr: engine::local_files()
  bool served = false;       ///< run by `cuconv serve` for a client
};

/// Runs one `cuconv` command line (args[0] is the program name) in `session`; returns the exit
/// code. Never throws.
[[nodiscard]] int run_command(const std::vector<std::string>& args, Session& session) noexcept;

}  // namespace cuconv::cli
