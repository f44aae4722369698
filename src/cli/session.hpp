// SPDX-License-Identifier: Apache-2.0
#pragma once
// One command's surroundings: where its text goes and how it reaches files. main() runs a command
// in a local session (this process's descriptors and file system); `cuconv serve` runs each
// client's command in a session of that client (its descriptors, its file access through the
// socket), so both run the same code (cli::run_command).
#include "engine/files.hpp"

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv {
struct ConvolveResult;
}
namespace cuconv::engine {
class WarmGpu;
}

namespace cuconv::cli {

struct Session {
  int in_fd = 0;                   ///< standard input of the command
  int out_fd = 1;                  ///< standard output
  int err_fd = 2;                  ///< standard error (messages)
  bool err_is_terminal = false;    ///< colours in messages
  engine::Files* files = nullptr;  ///< nullptr: engine::local_files()
  bool served = false;             ///< run by `cuconv serve` for a client
  /// A served command's working folder: its client's (absolute; empty when the client could not
  /// tell). Unused in a process of its own, whose folder is engine::working_folder().
  std::string working_folder;
  /// A served command's server, for -v and --json: "pid 123, socket /run/..., build ..., up 5 s".
  /// Empty in a process of its own.
  std::string server_description;
  /// In a process of its own: why the command was not served ("no server runs (SOCKET)", a
  /// server's refusal ...), for -v; empty when nobody asked (a library caller, a test).
  std::string not_served_why;
  /// The server's devices, JPEG pipelines and load (served commands); nullptr in a process of its own.
  engine::WarmGpu* warm = nullptr;
  /// A served command's client's terminal session (session_key of its pid, warnings.hpp), by
  /// which the server gives the no-GPU warning once per client session; empty: unknown.
  std::string caller_session;
  /// A served command's environment: its client's variables that cuconv reads
  /// (serve::forwarded_variable); unset: this process's own.
  std::optional<std::map<std::string, std::string, std::less<>>> environment;
  /// When the command started (a batch summary's startup_ms counts from here).
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  /// The process whose start -v's account counts from (time_account.hpp): this one, or a served
  /// command's client; 0: unknown. Its start is read only when the account is printed.
  long process_id = 0;
  /// "cuconv: level: message" lines on err_fd; made by run_command when unset.
  std::shared_ptr<spdlog::logger> logger;
  /// A served command's stop signal (serve::ClientSession::interrupt_signal: the client's
  /// forwarded SIGINT/SIGTERM/SIGHUP); unset: this process's own (cli::received_signal).
  std::function<int()> interrupted;
  /// Test seam: called with each filtered result before --compare judges it, so a test can plant
  /// a wrong result and watch the mismatch path (exit 6, nothing written). Unset in the product.
  std::function<void(ConvolveResult&)> before_compare;

  [[nodiscard]] spdlog::logger& log() { return *logger; }
  [[nodiscard]] engine::Files& file_access() { return files != nullptr ? *files : engine::local_files(); }
  /// The folder the command's relative paths start from: its client's when served, else this
  /// process's.
  [[nodiscard]] std::string caller_folder() const { return served ? working_folder : engine::working_folder(); }
  /// Writes `text` to the command's standard output; Error{output} when it cannot.
  void print(std::string_view text) const;
  /// The signal that stops the command at its next step (see `interrupted`), or 0.
  [[nodiscard]] int interrupt_signal() const;
  /// The command's environment variable `name` (nullptr when unset), as std::getenv answers.
  [[nodiscard]] const char* getenv(const char* name) const;
};

/// The no-GPU warning for `reason` unless the command's environment silences it
/// (CUCONV_NO_GPU_WARNING=1), once per terminal session: in a process of its own, by a marker in
/// the user's private runtime folder ($XDG_RUNTIME_DIR/cuconv, else /tmp/cuconv-UID, mode 0700;
/// first_in_session), made through the session's Files; served, once per server and client
/// session (caller_session). Where neither can tell (no folder, no session), once per process or
/// command.
[[nodiscard]] std::optional<std::string> gpu_warning(const Session& session, std::string_view reason);

/// Where the command runs, for -v once its checks have passed (so a refusal stays alone): "served
/// by cuconv serve: pid N, socket S, BUILD, up T" or "running in this process (pid N): WHY"
/// (docs/serve.md, "Served or in-process: the rule").
[[nodiscard]] std::string where_it_runs(const Session& session);

/// The logger of a session writing to `fd` (colours when `terminal`), at warnings.
[[nodiscard]] std::shared_ptr<spdlog::logger> make_session_logger(int fd, bool terminal);

/// Runs one `cuconv` command line (args[0] is the program name) in `session`; returns the exit
/// code. Never throws.
[[nodiscard]] int run_command(const std::vector<std::string>& args, Session& session) noexcept;

}  // namespace cuconv::cli
