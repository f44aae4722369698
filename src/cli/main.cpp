// cuconv's entry point: one command line in this process's own session (cli::run_command).
// src/cli/ is the only place that knows about argv, CLI11, spdlog and exit codes.
#include "cli/interrupt.hpp"
#include "cli/library_messages.hpp"
#include "cli/session.hpp"

#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv) {
  cuconv::cli::ignore_file_size_signal();  // a write past `ulimit -f` is a write error, not a kill
  std::vector<std::string> args(argv, argv + argc);
  cuconv::cli::Session session;
  // Messages go to the terminal's own descriptor, which stays put while LibraryMessages captures 2.
  session.err_fd = ::fileno(cuconv::cli::terminal_stderr());
  session.err_is_terminal = ::isatty(session.err_fd) != 0;
  const int code = cuconv::cli::run_command(args, session);
  std::fflush(stdout);
  return code;
}
