// SPDX-License-Identifier: Apache-2.0
// cuconv's entry point: one command line in this process's own session (cli::run_command).
// src/cli/ is the only place that knows about argv, CLI11, spdlog and exit codes.
#include "cli/exit_handoff.hpp"
#include "cli/interrupt.hpp"
#include "cli/library_messages.hpp"
#include "cli/serve_command.hpp"
#include "cli/session.hpp"
#include "serve/client.hpp"

#include <chrono>
#include <cstring>
#include <optional>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  // -v's account of the time: the start-up before main ends here.
  const auto entered = std::chrono::steady_clock::now();
  cuconv::serve::occupy_closed_standard_descriptors();  // before anything here opens a descriptor
  cuconv::cli::ignore_file_size_signal();               // a write past `ulimit -f` is a write error, not a kill
  if (argc > 1 && std::strcmp(argv[1], "serve") == 0) return cuconv::cli::run_serve_command(argc, argv);
  // A user's server runs the command when one answers (--server, $CUCONV_SERVER); else this process.
  // The front end (`cuconv`) has asked the server already when it execs this engine, and says why
  // the command was not served; the variable goes at once, so nothing this command starts sees it.
  std::optional<std::string> not_served;
  if (const char* why = std::getenv(cuconv::serve::kNotServedVariable); why != nullptr) not_served = why;
  ::unsetenv(cuconv::serve::kNotServedVariable);
  const cuconv::serve::ServerPolicy policy = cuconv::serve::read_server_policy(argc, argv);
  if (policy.error.empty() && !not_served) {
    cuconv::serve::ClientOptions client;
    if (policy.spawn) client.spawn_command = {"/proc/self/exe", "serve"};
    std::string why_not;
    if (const auto code = cuconv::serve::run_served(argc, argv, policy, client, &why_not)) return *code;
    not_served = std::move(why_not);
  }
  std::vector<std::string> args(argv, argv + argc);
  cuconv::cli::Session session;
  session.started = entered;
  session.process_id = ::getpid();
  if (not_served) session.not_served_why = std::move(*not_served);
  // Messages go to the terminal's own descriptor, which stays put while LibraryMessages captures 2.
  session.err_fd = ::fileno(cuconv::cli::terminal_stderr());
  session.err_is_terminal = ::isatty(session.err_fd) != 0;
  const int code = cuconv::cli::run_command(args, session);
  std::fflush(nullptr);  // every open output stream, the terminal's own descriptor's included
#if defined(__SANITIZE_ADDRESS__)
  return code;  // the sanitizers' checks run at exit
#else
  // Everything the command made is written and closed: what is left (the CUDA contexts, nvJPEG's
  // handles, the loaded libraries) is the operating system's to take back, and the driver's
  // teardown of the contexts is left to a keeper process (exit_handoff.hpp), not waited for here.
  cuconv::cli::exit_leaving_teardown(code);
#endif
}
