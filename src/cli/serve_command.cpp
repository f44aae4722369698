// SPDX-License-Identifier: Apache-2.0
// `cuconv serve` (serve_command.hpp): each client's command runs through cli::run_command in a
// session of that client (its descriptors, its files through the socket), on the server's warm GPU.
#include "cli/serve_command.hpp"
#include "cli/option_names.hpp"

#include "cli/byte_size.hpp"
#include "cli/command_line.hpp"
#include "cli/device_list.hpp"
#include "cli/help_page.hpp"
#include "cli/session.hpp"
#include "cli/warnings.hpp"
#include "common/thread_stderr.hpp"
#include "engine/warm_gpu.hpp"
#include "serve/build_identity.hpp"
#include "serve/control.hpp"
#include "serve/server.hpp"
#include "serve/socket_path.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <string_view>
#include <thread>

namespace cuconv::cli {

namespace {

/// `cuconv serve --status` when no server runs (as an init script's status: 3, not running).
constexpr int kNoServerExit = 3;

/// One line on the server's log once the GPU set-up is done: what it serves, and how long it took.
void log_when_ready(engine::WarmGpu& warm, int log_fd, std::chrono::steady_clock::time_point start) {
  const std::vector<int>& devices = warm.devices();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::string line;
  if (devices.empty()) {
    line = fmt::format("cuconv serve: {}\n", warm.setup_note());
  } else {
    const engine::WarmGpuCodecs* codecs = warm.gpu_codecs();
    const std::string warm_codecs = codecs != nullptr ? codecs->names() + ", warm" : std::string();
    const std::string& off = warm.setup_note();
    line = fmt::format("cuconv serve: GPU ready in {:.0f} ms: device(s) {}; GPU codecs: {}{}{}\n", ms,
                       fmt::join(devices, ","), warm_codecs, warm_codecs.empty() || off.empty() ? "" : "; ", off);
  }
  [[maybe_unused]] const ssize_t n = ::write(log_fd, line.data(), line.size());
}

/// Whether the libraries read `name` once per process (OpenCV's OPENCV_*, CUDA's CUDA_*, OpenMP's
/// OMP_*): the server's own value then holds for every command it runs.
bool process_wide_variable(std::string_view name) {
  return name.starts_with("OPENCV_") || name.starts_with("CUDA_") || name.starts_with("OMP_");
}

using Values = std::map<std::string, std::string, std::less<>>;

/// The variables among `entries` ("NAME=value") that the libraries read once per process.
Values process_wide_values(const std::vector<std::string_view>& entries) {
  Values values;
  for (const std::string_view entry : entries) {
    const std::size_t equals = entry.find('=');
    if (equals != std::string_view::npos && process_wide_variable(entry.substr(0, equals)))
      values.emplace(entry.substr(0, equals), entry.substr(equals + 1));
  }
  return values;
}

/// Why a client's command cannot run here exactly as in its own process: the first variable read
/// once per process whose value (or absence) in the client's `environment` ("NAME=value") differs
/// from this server's; empty when none does.
std::string process_wide_difference(const std::vector<std::string>& environment) {
  const Values theirs = process_wide_values({environment.begin(), environment.end()});
  static const Values ours = [] {  // the server's own, read once as its libraries read them
    std::vector<std::string_view> entries;
    for (char** variable = environ; *variable != nullptr; ++variable) entries.emplace_back(*variable);
    return process_wide_values(entries);
  }();
  const auto shown = [](const auto& values, const std::string& name) {
    const auto found = values.find(name);
    return found == values.end() ? std::string("unset") : "'" + found->second + "'";
  };
  for (const Values* side : {&theirs, &ours}) {
    for (const auto& [name, value] : *side) {
      if (shown(theirs, name) == shown(ours, name)) continue;
      return "the server cannot run this command as its own process would: " + name + " is " + shown(theirs, name) +
             " here and " + shown(ours, name) + " in the server, which read it once at its start";
    }
  }
  return {};
}

/// `cuconv serve --status` and `--stop`: asks the server on `socket` (empty: the default one)
/// through the protocol, so a socket-activated server answers as well.
int ask_running_server(const std::string& socket, bool stop) {
  const std::string path =
      socket.empty() ? serve::default_socket_path().path : serve::explicit_socket_path(socket).path;
  const serve::ServerAnswer answer =
      serve::ask_server(path, stop ? serve::HelloPurpose::stop : serve::HelloPurpose::status, 5000);
  std::string text;
  int code = 0;
  if (!answer.status) {
    text = fmt::format("running: no ({})\n", answer.why);
    code = stop ? 0 : kNoServerExit;
    if (answer.connected == serve::Connect::ok) code = static_cast<int>(ExitCode::internal);  // it answered wrongly
  } else if (!stop) {
    text = serve::describe_status(*answer.status);
  } else if (answer.ended) {
    text = fmt::format("stopped: the server pid {} on {} has stopped\n", answer.status->pid, path);
  } else {
    text = fmt::format("the server pid {} on {} was asked to stop but has not: {}\n", answer.status->pid, path,
                       answer.why);
    code = static_cast<int>(ExitCode::internal);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return code;
}

}  // namespace

int run_serve_command(int argc, const char* const* argv) {
  CLI::App app{"cuconv serve: run cuconv commands of this user's clients in one resident process (docs/serve.md)",
               "cuconv serve"};
  serve::ServerOptions options;
  // The help page has the layout of `cuconv --help` (command_line.hpp's help_page).
  app.formatter(
      help_page("Usage: cuconv serve [options]\n"
                "  or:  cuconv serve --status | --stop\n"
                "\n"
                "Examples:\n"
                "  cuconv serve &            later cuconv calls of this user run in it, without start-up\n"
                "  cuconv serve --status     whether one runs: pid, build, uptime, devices, requests\n"
                "  cuconv serve --stop       stop it; the requests in flight finish\n",
                {"Options"}));
  app.get_help_ptr()->description("print this help and exit");
  app.add_option("--socket", options.socket_path,
                 "socket to listen on (default: $CUCONV_SOCKET, $XDG_RUNTIME_DIR/cuconv/socket or "
                 "/tmp/cuconv-$UID/socket); systemd's socket activation passes its own")
      ->option_text("PATH");
  app.add_option("--idle-exit", options.idle_exit_seconds,
                 "exit after this many seconds without a client; 0: never (default " +
                     std::to_string(options.idle_exit_seconds) + ")")
      ->option_text("SECONDS");
  app.add_option("--max-clients", options.max_clients,
                 "commands run at once; later clients wait (default " + std::to_string(options.max_clients) + ")")
      ->check(CLI::Range(1U, 4096U))
      ->option_text("N");
  std::string devices_text;
  app.add_option("--devices", devices_text,
                 "all, or CUDA device indices 0,1,...: each image goes to the one with the fewest in flight "
                 "(default: all)")
      ->option_text("LIST");
  std::string gpu_memory_text;
  app.add_option("--gpu-memory", gpu_memory_text,
                 "most device memory one image may use, e.g. 8G (a command's own --gpu-memory within it); "
                 "larger images are filtered in strips")
      ->check(CLI::Validator(
          [](std::string& text) {
            return parse_byte_size(text) ? std::string() : "expected bytes, optionally followed by K, M, G or T";
          },
          "BYTES"))
      ->option_text("BYTES");
  bool status = false, stop = false;
  app.add_flag("--status", status,
               "say whether this user's server runs on the socket, and its pid, build, uptime, devices, GPU memory, "
               "requests served and clients now (exit 0 when one runs, 3 when none does)");
  app.add_flag("--stop", stop,
               "stop the server on the socket as SIGTERM does (its requests in flight finish) and wait until it has "
               "stopped (exit 0, also when none ran)");
  std::vector<std::string> args(argv + 1, argv + argc);
  args.erase(args.begin());  // "serve"
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
    if (status && stop) throw CLI::ValidationError("--status and --stop", "choose one");
  } catch (const CLI::ParseError& e) {
    // --help answers 0; a mistake is a usage error (2), as in the rest of the command line.
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }
  if (status || stop) return ask_running_server(options.socket_path, stop);
  std::vector<int> devices;
  std::uint64_t gpu_memory = 0;
  try {
    // Named devices are checked before the socket opens (a mistake is the caller's to see); `all`
    // is found by the set-up.
    if (!devices_text.empty() && devices_text != "all") devices = parse_devices(devices_text, true);
    if (!gpu_memory_text.empty()) gpu_memory = *parse_byte_size(gpu_memory_text);
  } catch (const Error& e) {
    const std::string line = std::string("cuconv serve: ") + in_cli_terms(e.what()) + "\n";
    [[maybe_unused]] const ssize_t n = ::write(options.log_fd, line.data(), line.size());
    return static_cast<int>(exit_code_for(e.kind()));
  }
  // Each command's threads print into its own client's messages (library_messages.hpp).
  common::route_stderr_by_thread();
  // SIGTERM and SIGINT (systemd's stop, Ctrl-C) drain the server: blocked before the warm GPU's
  // and CUDA's threads start, so that those threads inherit the mask and run_server reads them.
  if (options.handle_signals) serve::block_stop_signals();
  // The GPU warms beside the socket's set-up and the first accepts; commands that need it wait
  // for it, as they would for CUDA's own initialisation in a process of their own.
  const auto start = std::chrono::steady_clock::now();
  engine::WarmGpu warm(std::move(devices), gpu_memory);
  std::thread ready_line(log_when_ready, std::ref(warm), options.log_fd, start);
  options.build = serve::build_description();
  options.executable = serve::own_executable();
  options.identity = serve::file_identity(options.executable);  // clients of another engine run in-process
  options.leave_working_folder = true;
  options.describe = [&warm](serve::Status& status) {
    const std::vector<int>& served = warm.devices();
    status.devices = served.empty() ? warm.setup_note() : fmt::format("CUDA device(s) {}", fmt::join(served, ","));
    status.gpu_memory_held = warm.kept_workspace_bytes();
  };
  const int code =
      serve::run_server(options, [&warm](const serve::ClientRequest& request, serve::ClientSession& client) {
        Session session;
        session.server_description = request.server_description;
        session.in_fd = client.in_fd();
        session.out_fd = client.out_fd();
        session.err_fd = client.err_fd();
        session.err_is_terminal = request.err_is_terminal;
        session.files = &client.files();
        session.served = true;
        session.working_folder = request.cwd;  // where the client's relative paths start
        session.warm = &warm;
        session.interrupted = [&client] { return client.interrupt_signal(); };
        session.caller_session = session_key(request.pid);  // the no-GPU warning: once per client session
        session.process_id = request.pid;                   // -v's account of the time: the client's start-up
        if (const std::string why = process_wide_difference(request.environment); !why.empty())
          throw serve::Refusal{serve::RefusalReason::environment, why};
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
