// SPDX-License-Identifier: Apache-2.0
// The served client (see client.hpp): connect, hand over the command and descriptors 0, 1, 2,
// answer the server's file operations with this process's own rights, return the exit code.
#include "serve/client.hpp"

#include "serve/build_identity.hpp"
#include "serve/channel.hpp"
#include "serve/control.hpp"
#include "serve/file_servant.hpp"
#include "serve/output_relay.hpp"
#include "serve/socket_path.hpp"

#include "common/anonymous_file.hpp"
#include "common/write_all.hpp"
#include "engine/files.hpp"

#include <array>
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <chrono>
#include <csignal>
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <memory>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cuconv::serve {

namespace {

using clock_type = std::chrono::steady_clock;

void say(const std::string& text) {
  const std::string line = "cuconv: " + text + "\n";
  [[maybe_unused]] const ssize_t n = ::write(2, line.data(), line.size());
}

bool parse_mode(const std::string& value, ServerPolicy& policy) {
  if (value == "auto") policy.mode = ServerMode::automatic;
  else if (value == "always") policy.mode = ServerMode::always;
  else if (value == "never") policy.mode = ServerMode::never;
  else return false;
  return true;
}

// ---- connecting (connect_socket, channel.hpp) ----------------------------------------------------

/// Starts `command` detached (own session, no terminal; stderr to serve.log in the socket's folder).
void spawn_server(const std::vector<std::string>& command, const std::string& folder) {
  if (command.empty()) return;
  const pid_t child = ::fork();
  if (child < 0) return;
  if (child == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    const int null = ::open("/dev/null", O_RDWR);
    ::mkdir(folder.c_str(), 0700);
    const int log = ::open((folder + "/serve.log").c_str(), O_WRONLY | O_APPEND | O_CREAT, 0600);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(log >= 0 ? log : null, 2);
    // Nothing else of the caller's stays open in the daemon: an inherited pipe would keep whoever
    // waits for its end (a shell's $(...), make's jobserver) waiting for the server's lifetime.
    ::close_range(3, ~0U, 0);
    std::vector<char*> args;
    for (const auto& arg : command) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
}

// ---- the request ----------------------------------------------------------------------------------
volatile std::sig_atomic_t g_signal = 0;
volatile int g_signal_pipe = -1;  // write end: the handler wakes the channel's wait through it
extern "C" void note_signal(int signal) {
  g_signal = signal;
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe, &byte, 1);
  errno = saved;
}

/// Catches SIGINT, SIGTERM and SIGHUP (those not ignored) for the length of a request, so the
/// command hears of them, restoring the caller's handlers afterwards; read_fd() becomes readable
/// when one arrives.
class SignalGuard {
 public:
  SignalGuard() {
    int ends[2] = {-1, -1};
    if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0) {
      read_.reset(ends[0]);
      write_.reset(ends[1]);
    }
    g_signal = 0;
    g_signal_pipe = write_.get();
    struct sigaction action {};
    action.sa_handler = note_signal;
    sigemptyset(&action.sa_mask);
    // A signal ignored when the client started (nohup, a background job of a non-interactive
    // shell) stays ignored, as it does for a command in a process of its own.
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction current {};
      if (::sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
      installed_[i] = ::sigaction(kSignals[i], &action, &old_[i]) == 0;
    }
  }
  ~SignalGuard() {
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      if (installed_[i]) ::sigaction(kSignals[i], &old_[i], nullptr);
    g_signal_pipe = -1;
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  [[nodiscard]] int read_fd() const noexcept { return read_.get(); }
  /// Empties the pipe, so that the next signal wakes the channel's wait again.
  void rearm() const noexcept {
    for (char bytes[64]; ::read(read_.get(), bytes, sizeof bytes) > 0;) continue;
  }

 private:
  UniqueFd read_, write_;
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
  std::array<bool, 3> installed_{};
};

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace

void occupy_closed_standard_descriptors() noexcept {
  for (const int fd : {0, 1, 2}) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // Not close-on-exec: the engine the front end execs sees the same closed descriptor.
    const int null = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
}

ServerPolicy read_server_policy(int argc, const char* const* argv) {
  ServerPolicy policy;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    std::string value;
    if (arg == "--server" && i + 1 < argc) value = argv[i + 1];
    else if (arg.rfind("--server=", 0) == 0) value = arg.substr(9);
    else continue;
    if (!parse_mode(value, policy)) {
      policy.mode = ServerMode::never;
      policy.error = "--server: '" + value + "' is not one of auto, always, never";
    }
    return policy;
  }
  if (const char* env = std::getenv("CUCONV_SERVER"); env != nullptr && *env != '\0') {
    const std::string value = env;
    if (value == "spawn") {
      policy.spawn = true;
    } else if (!parse_mode(value, policy)) {
      policy.mode = ServerMode::never;
      policy.error = "CUCONV_SERVER: '" + value + "' is not one of auto, always, never, spawn";
    }
  }
  return policy;
}

std::optional<int> run_served(int argc, const char* const* argv, const ServerPolicy& policy,
                              const ClientOptions& options, std::string* why_not) {
  if (policy.mode == ServerMode::never || argc < 1) {
    if (why_not != nullptr) *why_not = "--server never (or CUCONV_SERVER=never)";
    return std::nullopt;
  }
  const bool always = policy.mode == ServerMode::always;
  auto no_server = [&](const std::string& why, bool tell) -> std::optional<int> {
    if (always) {
      say("--server always: " + why);
      return kServerFailedExit;
    }
    if (tell) say("not using the server: " + why);
    if (why_not != nullptr) *why_not = why;
    return std::nullopt;
  };

  // Memory limits apply to a whole process: the server cannot hold one request to them.
  for (const auto& [resource, name] : {std::pair{RLIMIT_AS, "RLIMIT_AS (ulimit -v)"}, std::pair{RLIMIT_DATA, "RLIMIT_DATA (ulimit -d)"}}) {
    if (rlimit limit{}; ::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      return no_server(std::string("this process has a memory limit, ") + name + ", that a server cannot apply to one command", false);
  }

  const SocketPath where = options.socket_path.empty() ? default_socket_path() : explicit_socket_path(options.socket_path);
  {
    struct stat st {};
    if (::lstat(where.folder.c_str(), &st) != 0 && (!policy.spawn || where.from_environment))
      return no_server("no server runs (" + where.path + ")", false);
    if (::lstat(where.folder.c_str(), &st) == 0) {
      // A folder someone else could have made or entered may hold their socket, not our server.
      const std::string why = where.from_environment ? check_socket_folder(where.folder) : check_private_folder(where.folder);
      if (!why.empty()) return no_server(why, true);
    }
  }

  UniqueFd socket;
  std::string why;
  Connect connected = connect_socket(where.path, options.connect_timeout_ms, socket, why);
  if (connected == Connect::absent && policy.spawn) {
    spawn_server(options.spawn_command, where.folder);
    const auto deadline = clock_type::now() + std::chrono::milliseconds(options.spawn_wait_ms);
    while (connected == Connect::absent && clock_type::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      connected = connect_socket(where.path, options.connect_timeout_ms, socket, why);
    }
  }
  if (connected == Connect::absent) return no_server("no server runs (" + where.path + ")", false);
  if (connected == Connect::failed) return no_server(why, true);

  const PeerCredentials server = peer_credentials(socket.get());
  if (server.uid != static_cast<long>(::getuid())) {
    return no_server(where.path + " is served by uid " + std::to_string(server.uid) + ", not by this user", true);
  }

  SignalGuard signals;  // before the request: from then on an interruption must clean up
  Channel channel(std::move(socket), signals.read_fd());
  const std::string build = options.build.empty() ? build_description() : options.build;
  if (!channel.send(Hello{kProtocolMagic, kProtocolVersion, HelloPurpose::command, build, options.engine_identity}))
    return no_server(where.path + ": " + errno_text(errno), true);

  // The first answer must come soon; after Queued, the server is alive and this client waits.
  std::uint32_t server_pid = 0;
  int silence_ms = -1;  // how long the server may say nothing mid-request; -1: no limit
  int wait_ms = options.connect_timeout_ms;
  for (;;) {
    Received first = channel.receive(wait_ms);
    if (first.status == Received::Status::interrupted) return 128 + static_cast<int>(g_signal);
    if (first.status == Received::Status::timeout) {
      return no_server(where.path + ": the server did not answer within " + std::to_string(wait_ms) + " ms", true);
    }
    if (first.status != Received::Status::message) {
      return no_server(where.path + ": the server closed the connection" + (first.error.empty() ? "" : ": " + first.error), true);
    }
    if (const auto* welcome = std::get_if<Welcome>(&first.message)) {
      server_pid = welcome->server_pid;
      if (welcome->ping_interval_ms > 0) {
        silence_ms = static_cast<int>(std::min<std::uint32_t>(welcome->ping_interval_ms, 600'000)) * kSilentPings;
      }
      break;
    }
    if (const auto* queued = std::get_if<Queued>(&first.message)) {
      // Wait for a place as long as the server shows it lives.
      wait_ms = queued->ping_interval_ms == 0
                    ? -1
                    : static_cast<int>(std::min<std::uint32_t>(queued->ping_interval_ms, 600'000)) * kSilentPings;
      continue;
    }
    if (std::holds_alternative<Ping>(first.message)) continue;
    if (const auto* refused = std::get_if<Refused>(&first.message)) {
      if (refused->reason == RefusalReason::build) {
        // A server of another build (an upgrade, a rebuilt tree) serves no command of this one:
        // it is asked to exit once its last request ends, so the next call starts this build's.
        (void)ask_server(where.path, HelloPurpose::stop_when_idle, options.connect_timeout_ms);
      }
      const bool quiet = refused->reason == RefusalReason::busy || refused->reason == RefusalReason::shutting_down ||
                         refused->reason == RefusalReason::build;
      return no_server(refused->message, !quiet);
    }
    return no_server(where.path + ": the server answered out of turn", true);
  }

  // From here the server may create files for this command: run it to the end or clean up.
  FileServant servant;
  char cwd[4096];
  Request request;
  request.argv.assign(argv, argv + argc);
  request.cwd = ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "";
  request.err_is_terminal = ::isatty(2) == 1;
  if (rlimit limit{}; ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    request.file_size_limit = std::max<std::uint64_t>(limit.rlim_cur, 1);
  // The whole environment: the server takes what the command reads (forwarded_variable) and
  // refuses the request when a variable its libraries read once per process differs.
  for (char** variable = environ; *variable != nullptr; ++variable) request.environment.emplace_back(*variable);
  OutputRelay relay;
  UniqueFd in = usable(0), out = relay.for_server(1), err = relay.for_server(2);
  const int fds[3] = {in.get(), out.get(), err.get()};
  if (!channel.send(request, fds)) {
    // Nothing has run: the server starts a command only once the whole request has arrived.
    return no_server(errno == EMSGSIZE ? std::string("the command line is over the protocol's bound")
                                       : "the server (pid " + std::to_string(server_pid) + ") did not take the command: " +
                                             errno_text(errno),
                     true);
  }
  // The server holds the command's descriptors now; the relay's pipes end when it closes them.
  in.reset();
  out.reset();
  err.reset();
  relay.start();
  auto lost = [&](const std::string& how) {
    servant.remove_temporaries();
    say("the server (pid " + std::to_string(server_pid) + ", " + where.path + ") " + how +
        " before finishing this command; its unfinished outputs were removed. Run it again, or with"
        " --server never to run it in this process");
    return kServerFailedExit;
  };
  // After a forwarded signal: when the command must have stopped by.
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> grace_end;
  const auto give_up = [&] {
    servant.remove_temporaries();
    const int signal = static_cast<int>(g_signal);
    say(std::string("warning: interrupted by ") + (signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP") +
        "; outputs the server had not finished were removed, finished ones stay; run the same command again to finish");
    return 128 + signal;
  };
  for (;;) {
    int wait_ms = silence_ms;
    if (grace_end) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*grace_end - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<std::int64_t>(left, 0, wait_ms < 0 ? kInterruptGraceMs : wait_ms));
    }
    Received received = channel.receive(wait_ms);
    switch (received.status) {
      case Received::Status::message: break;
      case Received::Status::interrupted: {
        // The first signal goes to the command, which stops at its next step; a second one, or
        // a server that cannot take it, ends the wait here.
        if (grace_end || !channel.send(Interrupt{static_cast<std::int32_t>(g_signal)})) return give_up();
        signals.rearm();
        grace_end = Clock::now() + std::chrono::milliseconds(kInterruptGraceMs);
        continue;
      }
      case Received::Status::closed: return lost("stopped");
      case Received::Status::timeout:
        if (grace_end && Clock::now() >= *grace_end) return give_up();
        return lost("stopped answering (silent for " + std::to_string(silence_ms) + " ms)");
      case Received::Status::bad: return lost("broke the protocol (" + received.error + ")");
    }
    if (const auto* exit = std::get_if<Exit>(&received.message)) {
      relay.finish();
      return exit->code;
    }
    if (std::holds_alternative<Ping>(received.message)) continue;
    if (const auto* refused = std::get_if<Refused>(&received.message)) {
      servant.remove_temporaries();
      // Nothing has run: what the server cannot run as a process of its own runs here.
      if (refused->reason == RefusalReason::environment) return no_server(refused->message, false);
      say(refused->message);
      return kServerFailedExit;
    }
    channel.drop_fds();  // the server sends no descriptors
    // A signal handled while this message was read goes to the command before its answer: after
    // Ctrl-C the server's next question (the one that follows a truncated standard input, for
    // one) must find the Interrupt ahead of the Reply, as a process of its own would have stopped.
    if (g_signal != 0 && !grace_end) {
      if (!channel.send(Interrupt{static_cast<std::int32_t>(g_signal)})) return give_up();
      signals.rearm();
      grace_end = Clock::now() + std::chrono::milliseconds(kInterruptGraceMs);
    }
    if (!servant.answer(channel, received.message)) return lost("stopped");
  }
}

}  // namespace cuconv::serve
