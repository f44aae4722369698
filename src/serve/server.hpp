// SPDX-License-Identifier: Apache-2.0
#pragma once
// `cuconv serve`'s transport: listens on a unix socket (its own, or the ones systemd passes with
// LISTEN_FDS), admits only the server's own user (SO_PEERCRED), and runs each client's request on
// a thread of its own through a Handler, with the client's descriptors and a RemoteFiles through
// which every path the request names is opened by the client (docs/serve.md). What a request does
// (cli::run_command) is the handler's business, not this file's.
#include "engine/files.hpp"
#include "serve/channel.hpp"
#include "serve/listen_socket.hpp"

#include <cuconv/error.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace cuconv::serve {

struct ServerOptions {
  std::string socket_path;           ///< empty: default_socket_path()
  unsigned idle_exit_seconds = 600;  ///< exit after this long without a client; 0: never
  unsigned max_clients = 64;         ///< requests served at once; later clients wait (Queued)
  std::size_t max_waiting = 1024;    ///< clients waiting beyond max_clients; more are refused (busy)
  /// Listening sockets to serve instead of binding socket_path; empty: the ones systemd passed
  /// (systemd_listen_fds()), and when there are none, bind socket_path.
  std::vector<int> listen_fds;
  bool handle_signals = true;  ///< SIGTERM/SIGINT drain and exit (a second one exits at once)
  int stop_fd = -1;            ///< when readable, drain and exit as on SIGTERM (tests' seam)
  int log_fd = 2;              ///< one line per request and per event
  /// While a request runs, a Ping this often tells its client the server lives (a client that
  /// hears nothing for several intervals gives up with exit 5); 0: none.
  unsigned ping_interval_ms = 5000;
  /// A client that leaves what the server sent it unread this long (stopped with Ctrl-Z, frozen)
  /// is taken for gone: its connection is shut, so its command stops as on a hang-up (SIGHUP).
  unsigned stall_ms = 600'000;
  /// Hello, and then Request, must each arrive whole within this long (however they trickle in).
  unsigned message_deadline_ms = 10'000;
  /// This server's build, for Welcome and Status (build_description()).
  std::string build;
  /// The identity (file_identity()) a client's engine must have to be served; a client naming
  /// another is refused (RefusalReason::build). Empty: any (tests' servers).
  std::string identity;
  /// The executable watched for replacement (an upgrade): once replaced, the server exits when
  /// idle. Empty: not watched.
  std::string executable;
  /// chdir("/") once the socket is bound, so the server holds no caller's folder (the product's
  /// servers; not a test that runs the server in its own process).
  bool leave_working_folder = false;
  /// SO_SNDBUF of each client's connection; 0: the system's default (a test seam: a small one
  /// fills with the Pings a stopped client does not read).
  int socket_buffer_bytes = 0;
  /// Adds what the transport does not know to a Status: the devices served, GPU memory held.
  std::function<void(Status&)> describe;
};

/// A client's command as it arrived.
struct ClientRequest {
  std::vector<std::string> argv;         ///< argv[0] is the client's program name
  std::string cwd;                       ///< the client's working folder (for logs only)
  std::vector<std::string> environment;  ///< the client's forwarded variables, "NAME=value"
  std::uint64_t file_size_limit = 0;     ///< the client's RLIMIT_FSIZE in bytes; 0: none
  bool err_is_terminal = false;
  long pid = -1;  ///< the client's process (SO_PEERCRED)
  long uid = -1;
  /// The server, for -v and --json: "pid N, socket S, BUILD, up T".
  std::string server_description;
};

/// engine::Files answered by the client over the connection: every path is the client's to open,
/// list, create and rename; descriptors come back with the answers. Safe to call from several
/// threads (one operation at a time goes over the socket).
class RemoteFiles final : public engine::Files {
 public:
  /// `file_size_limit`: the client's RLIMIT_FSIZE (0: none); a longer output fails as a write
  /// of the client's own would (EFBIG).
  explicit RemoteFiles(Channel& channel, std::uint64_t file_size_limit = 0)
      : channel_(channel), file_size_limit_(file_size_limit) {}
  [[nodiscard]] engine::OpenedFile open_input(const std::string& path) override;
  [[nodiscard]] engine::FileKind kind(const std::string& path, bool follow_links) override;
  [[nodiscard]] engine::FileStatus status(const std::string& path) override;
  [[nodiscard]] bool same_file(const std::string& a, const std::string& b) override;
  [[nodiscard]] std::vector<std::string> list_directory(const std::string& path) override;
  void make_directories(const std::string& path) override;
  /// A temporary file the client makes beside `output`, written and synced here, then published by
  /// the client (renamed; no-replace unless `overwrite`); removed by the client on any failure.
  [[nodiscard]] bool write_output(const std::string& output, std::span<const unsigned char> bytes,
                                  bool overwrite) override;
  void remove(const std::string& path) noexcept override;
  /// An anonymous file the client makes in its `folder` (CreateScratch); open_input of its
  /// local_path() then reads it here, without asking the client.
  [[nodiscard]] engine::OpenedFile create_scratch(const std::string& folder) override;
  [[nodiscard]] std::uint64_t file_size_limit() const noexcept override { return file_size_limit_; }

  /// write_output's steps, apart for tests that stop a server between them.
  /// A temporary file beside an output, open for writing, as the client named it.
  struct TempOutput {
    engine::OpenedFile file;
    std::string name;
  };
  [[nodiscard]] TempOutput create_temp(const std::string& output);
  [[nodiscard]] bool publish(TempOutput& temp, const std::string& output, bool overwrite);
  void discard(TempOutput& temp) noexcept;

  /// The signal the client forwarded (Interrupt), SIGHUP once it has hung up, else 0; looks at
  /// the connection without waiting (and without waiting for a file operation in flight, which
  /// notices an Interrupt itself). Any thread.
  [[nodiscard]] int interrupt_signal() noexcept;

 private:
  /// Sends `question` and waits for its Reply; throws Error{kind} naming `path` when the client is
  /// gone or answers out of turn.
  Reply ask(const Message& question, const std::string& path, ErrorKind error_kind);
  /// The next message that is not an Interrupt (which is recorded), waiting up to `timeout_ms`.
  Received receive_answer(int timeout_ms = -1);
  std::mutex mutex_;
  Channel& channel_;
  std::uint64_t file_size_limit_ = 0;
  bool lost_ = false;
  std::atomic<int> signal_{0};
  std::set<std::string> scratch_paths_;  ///< create_scratch's local paths (under mutex_)
};

/// What a handler gets for one client: its descriptors (owned by the session) and its files.
class ClientSession {
 public:
  ClientSession(Channel& channel, UniqueFd in, UniqueFd out, UniqueFd err, std::uint64_t file_size_limit = 0)
      : in_(std::move(in)), out_(std::move(out)), err_(std::move(err)), files_(channel, file_size_limit) {}
  [[nodiscard]] int in_fd() const noexcept { return in_.get(); }
  [[nodiscard]] int out_fd() const noexcept { return out_.get(); }
  [[nodiscard]] int err_fd() const noexcept { return err_.get(); }
  [[nodiscard]] RemoteFiles& files() noexcept { return files_; }
  /// The signal that should stop the command, as one would stop a process of its own: the
  /// client's forwarded SIGINT/SIGTERM/SIGHUP, or SIGHUP once the client has gone; 0 while none.
  [[nodiscard]] int interrupt_signal() noexcept { return files_.interrupt_signal(); }

 private:
  UniqueFd in_, out_, err_;
  RemoteFiles files_;
};

/// Thrown by a Handler before it has run anything: the server answers Refused{reason, message}
/// instead of Exit, and the client runs the command in-process (or, under --server always, says
/// why and exits 5).
struct Refusal {
  RefusalReason reason = RefusalReason::environment;
  std::string message;
};

/// Runs one request; returns its exit code. An exception becomes exit code 1 with its message on
/// the client's stderr.
using Handler = std::function<int(const ClientRequest&, ClientSession&)>;

/// Serves until idle for idle_exit_seconds, or a stop (signal, stop_fd, a client's Hello of
/// purpose stop), or once idle after a client of another build asked so or the executable was
/// replaced. Returns 0 after a clean stop, ExitCode::not_started when it cannot start (the reason
/// on log_fd): socket folder not private, another server already on the socket, something that is
/// not a stale socket of this user at the socket's path, bind failure. Ignores SIGPIPE for the
/// whole process (a client's pipe may close under a write). Call it before other threads start
/// when handle_signals is set: it blocks SIGTERM and SIGINT in its thread and the threads it
/// starts, and reads them from a signalfd.
[[nodiscard]] int run_server(const ServerOptions& options, const Handler& handler);

/// Blocks SIGTERM and SIGINT in the calling thread, and so in every thread it starts afterwards:
/// run_server's signalfd sees a signal only where no thread of the process leaves it unblocked (a
/// thread that does takes it, and its default action ends the server without draining: CUDA's
/// and the warm GPU's threads did, on a GPU node). Call it first when threads start before
/// run_server.
void block_stop_signals();

}  // namespace cuconv::serve
