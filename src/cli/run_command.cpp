// SPDX-License-Identifier: Apache-2.0
// One command line in a session (session.hpp): parse, then list, describe or filter; the same
// code for a process of its own and for a client of `cuconv serve`.
#include "cli/batch_command.hpp"
#include "cli/codec_options.hpp"
#include "cli/command_line.hpp"
#include "cli/interrupt.hpp"
#include "cli/library_messages.hpp"
#include "cli/option_names.hpp"
#include "cli/session.hpp"
#include "cli/single_image.hpp"
#include "cli/warnings.hpp"
#include "common/write_all.hpp"
#include "serve/socket_path.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/version.hpp>

#include <fmt/format.h>
#include <spdlog/sinks/ansicolor_sink.h>
#include <opencv2/core/utility.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>

namespace cuconv::cli {

namespace {

/// A colour sink on a stream it owns (a duplicate of the session's descriptor).
class OwnedStreamSink final : public spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex> {
 public:
  OwnedStreamSink(std::FILE* file, bool owned)
      : spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>(file, spdlog::color_mode::automatic),
        file_(owned ? file : nullptr) {}
  ~OwnedStreamSink() override {
    if (file_ != nullptr) std::fclose(file_);
  }
  OwnedStreamSink(const OwnedStreamSink&) = delete;
  OwnedStreamSink& operator=(const OwnedStreamSink&) = delete;

 private:
  std::FILE* file_;
};

std::string list_filters() {
  std::string text = "Presets (built in, from filters/*.mat):\n";
  for (const std::string& name : preset_names()) text += fmt::format("  {:<24} {}\n", name, preset_summary(name));
  text += "Parametric (docs/filters.md defines the weights):\n";
  for (const ParametricFilter& kind : parametric_filters())
    text += fmt::format("  {:<24} {}\n", kind.syntax, kind.summary);
  text += "Also: an inline WxH[+X+Y]:v,v,... filter, a libvips .mat file or a plain matrix file.\n";
  return text;
}

std::string version_text() {
  std::string text =
      fmt::format("cuconv {}\ncommit {}, {} build\nOpenCV {}\n{}\n", CUCONV_VERSION, CUCONV_GIT_COMMIT,
                  *CUCONV_BUILD_TYPE != '\0' ? CUCONV_BUILD_TYPE : "default", cv::getVersionString(), cuda_versions());
  std::string reason;
  const std::vector<std::string> gpus = describe_gpus(&reason);
  if (gpus.empty()) text += fmt::format("GPU: none: {}; filtering runs on the CPU (OpenCV)\n", reason);
  for (const std::string& gpu : gpus) text += fmt::format("GPU {}\n", gpu);
  return text;
}

ExitCode dispatch(const ParsedCommand& command, Session& session) {
  const CliRequest& req = command.request;
  session.log().set_level(req.quiet ? spdlog::level::err : req.verbose ? spdlog::level::info : spdlog::level::warn);
  switch (command.action) {
    case Action::list_filters:
      session.print(list_filters());
      return ExitCode::ok;
    case Action::version:
      session.print(version_text());
      return ExitCode::ok;
    case Action::show_filter:
      session.print(
          describe_filter(load_filter_through(session.file_access(), req.show_filter, filter_load_options_of(req))));
      return ExitCode::ok;
    case Action::filter_batch:
    case Action::filter_image: {
      // The image libraries' own lines become log lines: from descriptor 2 in a process of its
      // own, from the command's threads when served (the server's descriptor 2 is its log).
      std::optional<LibraryMessages> library_messages;
      if (session.served)
        library_messages.emplace(req.verbose, session.log(), LibraryCapture::this_thread, session.err_fd);
      else
        library_messages.emplace(req.verbose, session.log());
      if (command.action == Action::filter_image) return run_single_image(req, command.options, session);
      const BatchRequest& batch = command.batch;
      const Filter filter =
          batch.no_filter ? Filter{}
                          : load_filter_through(session.file_access(), req.filter_spec, filter_load_options_of(req));
      return run_batch_command(batch, filter, command.options, codec_request(req, command.options),
                               gpu_output_options(req), session);
    }
    case Action::exit_now:
      break;
  }
  return static_cast<ExitCode>(command.exit_code);
}

}  // namespace

void Session::print(std::string_view text) const {
  // Served, a regular file as standard output is held to the client's `ulimit -f` as the kernel
  // holds a process of its own: what fits is written, then the write fails.
  const std::uint64_t limit = files != nullptr ? files->file_size_limit() : 0;
  struct stat st {};
  if (limit > 0 && ::fstat(out_fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t at = ::lseek(out_fd, 0, SEEK_CUR);
    const std::uint64_t room =
        at < 0 || static_cast<std::uint64_t>(at) >= limit ? 0 : limit - static_cast<std::uint64_t>(at);
    if (text.size() > room) {
      (void)common::write_all(out_fd, text.substr(0, room));
      throw Error(ErrorKind::output, "cannot write to standard output");
    }
  }
  if (!common::write_all(out_fd, text)) throw Error(ErrorKind::output, "cannot write to standard output");
}

std::string where_it_runs(const Session& session) {
  if (!session.served) {
    return fmt::format("running in this process (pid {}){}{}", ::getpid(), session.not_served_why.empty() ? "" : ": ",
                       session.not_served_why);
  }
  return "served by cuconv serve: " +
         (session.server_description.empty() ? std::string("(no description)") : session.server_description);
}

int Session::interrupt_signal() const { return interrupted ? interrupted() : received_signal(); }

const char* Session::getenv(const char* name) const {
  if (!environment) return std::getenv(name);
  const auto at = environment->find(std::string_view(name));
  return at == environment->end() ? nullptr : at->second.c_str();
}

namespace {

/// The user's private runtime folder for the command's markers: $XDG_RUNTIME_DIR/cuconv (where the
/// server's socket lives too), else /tmp/cuconv-UID; made 0700 and refused (empty) when it is a
/// link, another user's or open to others (serve::prepare_private_folder).
std::string runtime_folder(const Session& session) {
  const char* runtime = session.getenv("XDG_RUNTIME_DIR");
  const std::string folder = runtime != nullptr && runtime[0] == '/' ? std::string(runtime) + "/cuconv"
                                                                     : "/tmp/cuconv-" + std::to_string(::getuid());
  return serve::prepare_private_folder(folder).empty() ? folder : std::string();
}

}  // namespace

std::optional<std::string> gpu_warning(const Session& session, std::string_view reason) {
  if (!no_gpu_warning_wanted(session.getenv(kNoGpuWarningVariable))) return std::nullopt;
  if (session.served) {
    // The server remembers the client sessions it has warned, for as long as it runs.
    static std::mutex mutex;
    static std::set<std::string, std::less<>> warned;
    const std::lock_guard lock(mutex);
    if (!session.caller_session.empty() && !warned.insert(session.caller_session).second) return std::nullopt;
    return no_gpu_warning(reason);
  }
  std::optional<std::string> warning = no_gpu_warning_once(reason);
  if (!warning) return warning;
  const std::string key = session_key(::getpid());
  const std::string folder = key.empty() ? std::string() : runtime_folder(session);
  if (!folder.empty() &&
      !first_in_session(session.files != nullptr ? *session.files : engine::local_files(), folder, key))
    return std::nullopt;
  return warning;
}

std::shared_ptr<spdlog::logger> make_session_logger(int fd, bool) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  std::FILE* file = copy >= 0 ? ::fdopen(copy, "w") : nullptr;
  if (file != nullptr) std::setvbuf(file, nullptr, _IOLBF, 0);
  auto sink = std::make_shared<OwnedStreamSink>(file != nullptr ? file : stderr, file != nullptr);
  auto logger = std::make_shared<spdlog::logger>("cuconv", std::move(sink));
  logger->set_pattern("cuconv: %^%l%$: %v");
  logger->set_level(spdlog::level::warn);
  return logger;
}

int run_command(const std::vector<std::string>& args, Session& session) noexcept {
  try {
    if (!session.logger) session.logger = make_session_logger(session.err_fd, session.err_is_terminal);
  } catch (...) {
    return static_cast<int>(ExitCode::internal);
  }
  spdlog::logger& log = session.log();
  try {
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    const ParsedCommand command = parse_command_line(static_cast<int>(argv.size()), argv.data());
    if (command.action == Action::exit_now) {  // --help, or why the command line does not parse
      session.print(command.stdout_text);
      if (!common::write_all(session.err_fd, command.stderr_text))
        throw Error(ErrorKind::output, "cannot write to standard error");
      return command.exit_code;
    }
    return static_cast<int>(dispatch(command, session));
  } catch (const Error& e) {
    log.error("{}", in_cli_terms(e.what()));
    return static_cast<int>(exit_code_for(e.kind()));
  } catch (const std::exception& e) {
    log.error("internal error: {}", in_cli_terms(e.what()));
    return static_cast<int>(ExitCode::internal);
  }
}

}  // namespace cuconv::cli
