// `cuconv serve` (serve_command.hpp): each client's command runs through cli::run_command in a
// session of that client (its descriptors, its files through the socket), on the server's warm GPU.
#include "cli/serve_command.hpp"

#include "cli/session.hpp"
#include "engine/image_operation.hpp"
#include "serve/server.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <thread>

namespace cuconv::cli {

namespace {

/// Creates the CUDA context and loads the kernels of the common filters on the current device
/// (a small image through `auto`), so the first client does not pay for them. Without a GPU it
/// only finds that out.
void warm_gpu(int log_fd) {
  const auto start = std::chrono::steady_clock::now();
  std::string reason;
  std::string line;
  if (engine::gpu_usable(&reason)) {
    cv::Mat image(64, 64, CV_8UC3, cv::Scalar::all(128));
    for (const char* spec : {"gauss5", "box3"}) {
      try {
        (void)convolve(image, load_filter(spec), ConvolveOptions{});
      } catch (const std::exception&) {
        // A GPU fault here shows again, with its message, in the first client's command.
      }
    }
    line = fmt::format("cuconv serve: GPU ready in {:.0f} ms\n",
                       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  } else {
    line = fmt::format("cuconv serve: no usable CUDA device ({}); commands filter on the CPU\n", reason);
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
  std::vector<std::string> args(argv + 1, argv + argc);
  args.erase(args.begin());  // "serve"
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // The GPU warms beside the socket's set-up and the first accepts; commands that arrive first
  // wait for CUDA's own initialisation as they would in a process of their own.
  std::thread warm(warm_gpu, options.log_fd);
  warm.detach();
  return serve::run_server(options, [](const serve::ClientRequest& request, serve::ClientSession& client) {
    Session session;
    session.in_fd = client.in_fd();
    session.out_fd = client.out_fd();
    session.err_fd = client.err_fd();
    session.err_is_terminal = request.err_is_terminal;
    session.files = &client.files();
    session.served = true;
    return run_command(request.argv, session);
  });
}

}  // namespace cuconv::cli
