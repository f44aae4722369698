// SPDX-License-Identifier: Apache-2.0
// `cuconv serve` (serve_command.hpp): each client's command runs through cli::run_command in a
// session of that client (its descriptors, its files through the socket), on the server's warm GPU.
#include "cli/serve_command.hpp"

#include "cli/command_line.hpp"
#include "cli/device_list.hpp"
#include "cli/session.hpp"
#include "common/thread_stderr.hpp"
#include "engine/warm_gpu.hpp"
#include "serve/server.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <iostream>
#include <thread>

namespace cuconv::cli {

namespace {

/// One line on the server's log once the GPU set-up is done: what it serves, and how long it took.
void log_when_ready(engine::WarmGpu& warm, int log_fd, std::chrono::steady_clock::time_point start) {
  const std::vector<int>& devices = warm.devices();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::string line;
  if (devices.empty()) {
    line = fmt::format("cuconv serve: {}\n", warm.setup_note());
  } else {
    const codec::WarmGpuCodecs* codecs = warm.gpu_codecs();
    const std::string warm_codecs = codecs != nullptr ? codecs->names() + ", warm" : std::string();
    const std::string& off = warm.setup_note();
    line = fmt::format("cuconv serve: GPU ready in {:.0f} ms: device(s) {}; GPU codecs: {}{}{}\n", ms,
                       fmt::join(devices, ","), warm_codecs, warm_codecs.empty() || off.empty() ? "" : "; ", off);
  }
  [[maybe_unused]] const ssize_t n = ::write(log_fd, line.data(), line.size());
}

}  // namespace

int run_serve_command(int argc, const char* const* argv) {
  CLI::App app{"cuconv serve: run cuconv commands of this user's clients in one resident process (docs/serve.md)",
               "cuconv serve"};
  serve::ServerOptions options;
  app.add_option("--socket", options.socket_path,
                 "socket to listen on (default: $CUCONV_SOCKET, $XDG_RUNTIME_DIR/cuconv/socket or "
                 "/tmp/cuconv-$UID/socket); systemd's socket activation passes its own");
  app.add_option("--idle-exit", options.idle_exit_seconds, "exit after this many seconds without a client; 0: never")
      ->capture_default_str();
  app.add_option("--max-clients", options.max_clients, "commands run at once; later clients wait")
      ->check(CLI::Range(1U, 4096U))
      ->capture_default_str();
  std::string devices_text;
  app.add_option("--devices", devices_text,
                 "all, or CUDA device indices 0,1,...: each image goes to the one with the fewest in flight "
                 "(default: all)");
  std::string gpu_memory_text;
  app.add_option("--gpu-memory", gpu_memory_text,
                 "most device memory one image may use, e.g. 8G (a command's own --gpu-memory within it); "
                 "larger images are filtered in strips")
      ->check(CLI::Validator(
          [](std::string& text) {
            return parse_byte_size(text) ? std::string() : "expected bytes, optionally followed by K, M, G or T";
          },
          "BYTES"));
  std::vector<std::string> args(argv + 1, argv + argc);
  args.erase(args.begin());  // "serve"
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // --help answers 0; a mistake is a usage error (2), as in the rest of the command line.
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }
  std::vector<int> devices;
  std::uint64_t gpu_memory = 0;
  try {
    // Named devices are checked before the socket opens (a mistake is the caller's to see); `all`
    // is found by the set-up.
    if (!devices_text.empty() && devices_text != "all") devices = parse_devices(devices_text, true);
    if (!gpu_memory_text.empty()) gpu_memory = *parse_byte_size(gpu_memory_text);
  } catch (const Error& e) {
    const std::string line = std::string("cuconv serve: ") + e.what() + "\n";
    [[maybe_unused]] const ssize_t n = ::write(options.log_fd, line.data(), line.size());
    return static_cast<int>(exit_code_for(e.kind()));
  }
  // Each command's threads print into its own client's messages (library_messages.hpp).
  common::route_stderr_by_thread();
  // The GPU warms beside the socket's set-up and the first accepts; commands that need it wait
  // for it, as they would for CUDA's own initialisation in a process of their own.
  const auto start = std::chrono::steady_clock::now();
  engine::WarmGpu warm(std::move(devices), gpu_memory);
  std::thread ready_line(log_when_ready, std::ref(warm), options.log_fd, start);
  const int code = serve::run_server(options, [&warm](const serve::ClientRequest& request, serve::ClientSession& client) {
    Session session;
    session.in_fd = client.in_fd();
    session.out_fd = client.out_fd();
    session.err_fd = client.err_fd();
    session.err_is_terminal = request.err_is_terminal;
    session.files = &client.files();
    session.served = true;
    session.warm = &warm;
    session.interrupted = [&client] { return client.interrupt_signal(); };
    session.environment.emplace();
    for (const std::string& entry : request.environment) {
      const std::size_t equals = entry.find('=');
      if (equals != std::string::npos && serve::forwarded_variable(entry.substr(0, equals)))
        session.environment->emplace(entry.substr(0, equals), entry.substr(equals + 1));
    }
    return run_command(request.argv, session);
  });
  ready_line.join();
  return code;
}

}  // namespace cuconv::cli
