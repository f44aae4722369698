// SPDX-License-Identifier: Apache-2.0
#pragma once
// The client half of `cuconv serve`: hands a command line to the user's server and does the file
// operations it asks for (with this process's rights), until the exit code comes back. When no
// server answers, the caller runs the command in-process (or fails, under `--server always`).
#include <optional>
#include <string>
#include <vector>

namespace cuconv::serve {

/// `--server auto|always|never` (the CLI's option) or $CUCONV_SERVER (auto|always|never|spawn).
enum class ServerMode { automatic, always, never };
struct ServerPolicy {
  ServerMode mode = ServerMode::automatic;
  bool spawn = false;  ///< CUCONV_SERVER=spawn: start a detached `cuconv serve` when none answers
  std::string error;   ///< a value neither knows; mode is then never (the in-process CLI says why)
};

/// Makes each of descriptors 0, 1 and 2 that is closed refer to /dev/null, opened the way that
/// keeps it closed to the command: 0 write-only (a read fails with EBADF), 1 and 2 read-only (a
/// write fails with EBADF). Then no socket, pipe or file the process opens later becomes a
/// standard descriptor that the command would read or write. Call first in main, in both the
/// front end and the engine.
void occupy_closed_standard_descriptors() noexcept;

/// Reads the policy: `--server X` or `--server=X` among argv (before a `--`), else $CUCONV_SERVER,
/// else auto.
[[nodiscard]] ServerPolicy read_server_policy(int argc, const char* const* argv);

struct ClientOptions {
  std::string socket_path;        ///< empty: default_socket_path()
  int connect_timeout_ms = 2000;  ///< to connect and to hear the server's first answer
  /// The command that starts a server (ServerPolicy::spawn), e.g. {"/usr/bin/cuconv", "serve"}.
  std::vector<std::string> spawn_command;
  int spawn_wait_ms = 5000;  ///< how long a spawned server has to answer
  /// This client's build, told to the server (build_description(); tests set another).
  std::string build;
  /// file_identity() of the engine this client would exec; a server running another refuses it
  /// (the command then runs in-process, and the server is asked to exit once idle). Empty: unchecked.
  std::string engine_identity;
};

/// A server silent for this many of its ping intervals (Welcome::ping_interval_ms) mid-request is
/// taken for stopped (SIGSTOP, a frozen machine): the client cleans up and exits 5.
inline constexpr int kSilentPings = 6;

/// How long a client waits, after forwarding a signal, for the command to stop by itself (its
/// images in flight finish, as in-process).
inline constexpr int kInterruptGraceMs = 10'000;

/// The exit code of a command that the server began but could not finish.
inline constexpr int kServerFailedExit = 5;

/// Runs argv through the server. Returns its exit code; nullopt when no server answered and the
/// policy allows running in-process (mode automatic; never returns nullopt at once). Under
/// `always` without a server it prints why and returns kServerFailedExit. When the server stops
/// mid-request the temporary files this client made are removed, a message says what happened and
/// kServerFailedExit is returned (also when it stays silent for kSilentPings ping intervals). The
/// first SIGINT/SIGTERM/SIGHUP during a request is forwarded (Interrupt): the command stops at its
/// next step as a process of its own would, and its exit code is returned. A second signal, or no
/// Exit within kInterruptGraceMs, removes the unfinished outputs and returns 128 + the signal.
/// When it returns nullopt, `why_not` (if given) says why the command was not served, in the words
/// -v gives it ("no server runs (SOCKET)", the server's refusal ...).
[[nodiscard]] std::optional<int> run_served(int argc, const char* const* argv, const ServerPolicy& policy,
                                            const ClientOptions& options = {}, std::string* why_not = nullptr);

/// The variable through which the front end, having asked the server itself, tells the engine it
/// execs why the command was not served: the engine then asks no server a second time and -v says
/// why it runs in-process. The engine (src/cli/main.cpp) reads it and removes it from its
/// environment at once.
inline constexpr const char* kNotServedVariable = "CUCONV_NOT_SERVED";

}  // namespace cuconv::serve
