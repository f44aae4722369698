// SPDX-License-Identifier: Apache-2.0
// The served client (see client.hpp): connect, hand over the command and descriptors 0, 1, 2,
// answer the server's file operations with this process's own rights, return the exit code.
#include "serve/client.hpp"

#include "serve/build_identity.hpp"
#include "serve/channel.hpp"
#include "serve/control.hpp"
#include "serve/file_servant.hpp"
#include "serve/output_relay.hpp"
#include "serve/signal_guard.hpp"
#include "serve/socket_path.hpp"

#include "common/anonymous_file.hpp"
#include "common/write_all.hpp"
#include "engine/files.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <variant>

namespace cuconv::serve {

namespace {

using clock_type = std::chrono::steady_clock;

void say(const std::string& text) {
  const std::string line = "cuconv: " + text + "\n";
  [[maybe_unused]] const ssize_t n = ::write(2, line.data(), line.size());
}

bool parse_mode(const std::string& value, ServerPolicy& policy) {
  if (value == "auto")
    policy.mode = ServerMode::automatic;
  else if (value == "always")
    policy.mode = ServerMode::always;
  else if (value == "never")
    policy.mode = ServerMode::never;
  else
    return false;
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
std::string errno_text(int error) { return std::strerror(error); }

/// Why the command is not served, and whether the user is told so (an unexpected reason) or not
/// (no server runs, which is the ordinary case).
struct NoServer {
  std::string why;
  bool tell = false;
};

/// What run_served returns when the server does not run the command: nullopt (the caller runs it
/// in its own process), or under --server always the failure exit.
struct Fallback {
  bool always = false;
  std::string* why_not = nullptr;
  std::optional<int> operator()(const NoServer& no) const {
    if (always) {
      say("--server always: " + no.why);
      return kServerFailedExit;
    }
    if (no.tell) say("not using the server: " + no.why);
    if (why_not != nullptr) *why_not = no.why;
    return std::nullopt;
  }
};

/// The memory limit of this process a server could not apply to one command, if it has one
/// (limits apply to a whole process).
std::optional<std::string> memory_limit() {
  for (const auto& [resource, name] :
       {std::pair{RLIMIT_AS, "RLIMIT_AS (ulimit -v)"}, std::pair{RLIMIT_DATA, "RLIMIT_DATA (ulimit -d)"}}) {
    if (rlimit limit{}; ::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      return std::string("this process has a memory limit, ") + name + ", that a server cannot apply to one command";
  }
  return std::nullopt;
}

/// Why the socket's folder cannot hold our server: absent (and none will be started), or one
/// someone else could have made or entered, which may hold their socket, not our server.
std::optional<NoServer> unusable_socket_folder(const SocketPath& where, const ServerPolicy& policy) {
  struct stat st {};
  if (::lstat(where.folder.c_str(), &st) != 0 && (!policy.spawn || where.from_environment))
    return NoServer{"no server runs (" + where.path + ")", false};
  if (::lstat(where.folder.c_str(), &st) == 0) {
    const std::string why =
        where.from_environment ? check_socket_folder(where.folder) : check_private_folder(where.folder);
    if (!why.empty()) return NoServer{why, true};
  }
  return std::nullopt;
}

/// Connects to the server at `where`; with CUCONV_SERVER=spawn and none there, starts one and
/// tries again until it answers or options.spawn_wait_ms pass.
Connect connect_or_spawn(const SocketPath& where, const ServerPolicy& policy, const ClientOptions& options,
                         UniqueFd& socket, std::string& why) {
  Connect connected = connect_socket(where.path, options.connect_timeout_ms, socket, why);
  if (connected == Connect::absent && policy.spawn) {
    spawn_server(options.spawn_command, where.folder);
    const auto deadline = clock_type::now() + std::chrono::milliseconds(options.spawn_wait_ms);
    while (connected == Connect::absent && clock_type::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      connected = connect_socket(where.path, options.connect_timeout_ms, socket, why);
    }
  }
  return connected;
}

/// The server's first answer: Welcome, why it serves no command, or the exit code of a signal
/// that came first.
using Admission = std::variant<Welcome, NoServer, int>;

/// Waits for the server's Welcome. The first answer must come soon; after Queued, the server is
/// alive and this client waits as long as it pings.
Admission await_welcome(Channel& channel, const SocketPath& where, const ClientOptions& options) {
  int wait_ms = options.connect_timeout_ms;
  for (;;) {
    Received first = channel.receive(wait_ms);
    if (first.status == Received::Status::interrupted) return 128 + SignalGuard::caught();
    if (first.status == Received::Status::timeout)
      return NoServer{where.path + ": the server did not answer within " + std::to_string(wait_ms) + " ms", true};
    if (first.status != Received::Status::message)
      return NoServer{
          where.path + ": the server closed the connection" + (first.error.empty() ? "" : ": " + first.error), true};
    if (const auto* welcome = std::get_if<Welcome>(&first.message)) return *welcome;
    if (const auto* queued = std::get_if<Queued>(&first.message)) {
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
      return NoServer{refused->message, !quiet};
    }
    return NoServer{where.path + ": the server answered out of turn", true};
  }
}

/// The command as a Request: its arguments, folder, standard error's kind, file size limit and
/// the whole environment (the server takes what the command reads, forwarded_variable, and
/// refuses the request when a variable its libraries read once per process differs).
Request request_for(int argc, const char* const* argv) {
  char cwd[4096];
  Request request;
  request.argv.assign(argv, argv + argc);
  request.cwd = ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "";
  request.err_is_terminal = ::isatty(2) == 1;
  if (rlimit limit{}; ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    request.file_size_limit = std::max<std::uint64_t>(limit.rlim_cur, 1);
  for (char** variable = environ; *variable != nullptr; ++variable) request.environment.emplace_back(*variable);
  return request;
}

/// One admitted command: sends the request with descriptors 0, 1, 2, answers the server's file
/// operations until its Exit, forwards a signal, and cleans up when the server is lost.
class ServedCommand {
 public:
  ServedCommand(Channel& channel, const SignalGuard& signals, const SocketPath& where, const Welcome& welcome)
      : channel_(channel), signals_(signals), where_(where), server_pid_(welcome.server_pid) {
    // How long the server may say nothing mid-request; -1: no limit.
    if (welcome.ping_interval_ms > 0)
      silence_ms_ = static_cast<int>(std::min<std::uint32_t>(welcome.ping_interval_ms, 600'000)) * kSilentPings;
  }

  /// The command's exit code, or no_server's answer where the server refused it before it ran.
  std::optional<int> run(int argc, const char* const* argv, const Fallback& no_server) {
    // From here the server may create files for this command: run it to the end or clean up.
    const Request request = request_for(argc, argv);
    UniqueFd in = usable(0), out = relay_.for_server(1), err = relay_.for_server(2);
    const int fds[3] = {in.get(), out.get(), err.get()};
    if (!channel_.send(request, fds)) {
      // Nothing has run: the server starts a command only once the whole request has arrived.
      return no_server({errno == EMSGSIZE ? std::string("the command line is over the protocol's bound")
                                          : "the server (pid " + std::to_string(server_pid_) +
                                                ") did not take the command: " + errno_text(errno),
                        true});
    }
    // The server holds the command's descriptors now; the relay's pipes end when it closes them.
    in.reset();
    out.reset();
    err.reset();
    relay_.start();
    for (;;) {
      Received received = channel_.receive(wait_ms());
      switch (received.status) {
        case Received::Status::message:
          break;
        case Received::Status::interrupted:
          // The first signal goes to the command, which stops at its next step; a second one, or
          // a server that cannot take it, ends the wait here.
          if (grace_end_ || !forward_signal()) return give_up();
          continue;
        case Received::Status::closed:
          return lost("stopped");
        case Received::Status::timeout:
          if (grace_end_ && Clock::now() >= *grace_end_) return give_up();
          return lost("stopped answering (silent for " + std::to_string(silence_ms_) + " ms)");
        case Received::Status::bad:
          return lost("broke the protocol (" + received.error + ")");
      }
      if (const auto* exit = std::get_if<Exit>(&received.message)) {
        relay_.finish();
        return exit->code;
      }
      if (std::holds_alternative<Ping>(received.message)) continue;
      if (const auto* refused = std::get_if<Refused>(&received.message)) {
        servant_.remove_temporaries();
        // Nothing has run: what the server cannot run as a process of its own runs here.
        if (refused->reason == RefusalReason::environment) return no_server({refused->message, false});
        say(refused->message);
        return kServerFailedExit;
      }
      channel_.drop_fds();  // the server sends no descriptors
      // A signal handled while this message was read goes to the command before its answer: after
      // Ctrl-C the server's next question (the one that follows a truncated standard input, for
      // one) must find the Interrupt ahead of the Reply, as a process of its own would have stopped.
      if (SignalGuard::caught() != 0 && !grace_end_ && !forward_signal()) return give_up();
      if (!servant_.answer(channel_, received.message)) return lost("stopped");
    }
  }

 private:
  using Clock = std::chrono::steady_clock;

  /// How long the next receive waits: the silence limit, or what is left of the grace period.
  [[nodiscard]] int wait_ms() const {
    if (!grace_end_) return silence_ms_;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*grace_end_ - Clock::now()).count();
    return static_cast<int>(std::clamp<std::int64_t>(left, 0, silence_ms_ < 0 ? kInterruptGraceMs : silence_ms_));
  }

  /// Sends the signal to the command and starts the grace period it has to stop in; false when
  /// the server cannot take it.
  bool forward_signal() {
    if (!channel_.send(Interrupt{static_cast<std::int32_t>(SignalGuard::caught())})) return false;
    signals_.rearm();
    grace_end_ = Clock::now() + std::chrono::milliseconds(kInterruptGraceMs);
    return true;
  }

  /// The server ended (`how`) before the command did.
  int lost(const std::string& how) {
    servant_.remove_temporaries();
    say("the server (pid " + std::to_string(server_pid_) + ", " + where_.path + ") " + how +
        " before finishing this command; its unfinished outputs were removed. Run it again, or with"
        " --server never to run it in this process");
    return kServerFailedExit;
  }

  /// A second signal, or the command did not stop within the grace period.
  int give_up() {
    servant_.remove_temporaries();
    const int signal = SignalGuard::caught();
    say(std::string("warning: interrupted by ") +
        (signal == SIGINT    ? "SIGINT"
         : signal == SIGTERM ? "SIGTERM"
                             : "SIGHUP") +
        "; outputs the server had not finished were removed, finished ones stay; run the same command again to finish");
    return 128 + signal;
  }

  Channel& channel_;
  const SignalGuard& signals_;
  const SocketPath& where_;
  std::uint32_t server_pid_ = 0;
  int silence_ms_ = -1;
  FileServant servant_;
  OutputRelay relay_;
  std::optional<Clock::time_point> grace_end_;
};

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
    if (arg == "--server" && i + 1 < argc)
      value = argv[i + 1];
    else if (arg.rfind("--server=", 0) == 0)
      value = arg.substr(9);
    else
      continue;
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
  const Fallback no_server{policy.mode == ServerMode::always, why_not};
  if (const auto limit = memory_limit()) return no_server({*limit, false});
  const SocketPath where =
      options.socket_path.empty() ? default_socket_path() : explicit_socket_path(options.socket_path);
  if (const auto unsafe = unusable_socket_folder(where, policy)) return no_server(*unsafe);

  UniqueFd socket;
  std::string why;
  const Connect connected = connect_or_spawn(where, policy, options, socket, why);
  if (connected == Connect::absent) return no_server({"no server runs (" + where.path + ")", false});
  if (connected == Connect::failed) return no_server({why, true});
  const PeerCredentials server = peer_credentials(socket.get());
  if (server.uid != static_cast<long>(::getuid()))
    return no_server({where.path + " is served by uid " + std::to_string(server.uid) + ", not by this user", true});

  SignalGuard signals;  // before the request: from then on an interruption must clean up
  Channel channel(std::move(socket), signals.read_fd());
  const std::string build = options.build.empty() ? build_description() : options.build;
  if (!channel.send(Hello{kProtocolMagic, kProtocolVersion, HelloPurpose::command, build, options.engine_identity}))
    return no_server({where.path + ": " + errno_text(errno), true});
  const Admission admitted = await_welcome(channel, where, options);
  if (const auto* code = std::get_if<int>(&admitted)) return *code;
  if (const auto* refusal = std::get_if<NoServer>(&admitted)) return no_server(*refusal);
  const Welcome& welcome = std::get<Welcome>(admitted);
  ServedCommand command(channel, signals, where, welcome);
  return command.run(argc, argv, no_server);
}

}  // namespace cuconv::serve
