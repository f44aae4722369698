// SPDX-License-Identifier: Apache-2.0
// Single-image mode (`cuconv IN OUT`): the checks that need no pixels, then the engine's one
// per-image operation, then --compare/--bench reports and the write under the interrupt guard.
#include "cli/single_image.hpp"
#include "cli/option_names.hpp"

#include "cli/codec_options.hpp"
#include "cli/compare_report.hpp"
#include "cli/interrupt.hpp"
#include "cli/json_text.hpp"
#include "cli/stdin_copy.hpp"
#include "cli/temp_folder.hpp"
#include "cli/time_account.hpp"
#include "cli/warnings.hpp"
#include "common/library_loads.hpp"
#include "engine/image_operation.hpp"
#include "engine/warm_gpu.hpp"

#include <cuconv/image_io.hpp>

#include <fmt/format.h>

#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace cuconv::cli {

namespace {

constexpr std::string_view kStdinName = "standard input";

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

/// "png" for "png:-" (standard output in that format); empty for a file name.
std::string stdout_format(const std::string& output) {
  return output.size() > 2 && output.ends_with(":-") ? output.substr(0, output.size() - 2) : std::string();
}

/// A file name of the output's format: `output` itself, or a stand-in for FORMAT:- (never created) that the format,
/// encoder and metadata checks read the extension of.
std::string format_path(const std::string& output) {
  const std::string format = stdout_format(output);
  if (format.empty()) return output;
  return "cuconv-stdout." + format;
}

/// Whether the NVIDIA kernel driver is loaded (no CUDA call: that would start the driver).
bool nvidia_driver_loaded() {
  std::error_code ec;
  return std::filesystem::exists("/proc/driver/nvidia/version", ec);
}

void print_notes(const engine::ImageReport& report, spdlog::logger& log) {
  for (const engine::ImageNote& note : report.notes) {
    if (note.level == engine::ImageNote::Level::warning)
      log.warn("{}", in_cli_terms(note.text));
    else
      log.info("{}", in_cli_terms(note.text));
  }
}

}  // namespace

Filter load_filter_through(engine::Files& files, const std::string& spec, const FilterLoadOptions& options) {
  // A filter file is looked at and opened through the session's file access (a client's, when
  // served); presets, parametric and inline filters are no paths.
  using Kind = FilterLoadOptions::FileAccess::Kind;
  std::optional<engine::OpenedFile> opened;  // open until the filter is read
  FilterLoadOptions through = options;
  through.files.kind = [&files](const std::string& path) {
    switch (files.kind(path, true)) {
      case engine::FileKind::none:
        return Kind::none;
      case engine::FileKind::regular:
        return Kind::regular;
      case engine::FileKind::directory:
        return Kind::directory;
      default:
        return Kind::other;
    }
  };
  through.files.open = [&files, &opened](const std::string& path) {
    opened.emplace(files.open_input(path));
    return opened->local_path();
  };
  return load_filter(spec, through);
}

std::optional<std::string> skipped_existing_output(const CliRequest& request, engine::Files& files) {
  if (!request.skip_existing || request.output.ends_with(":-")) return std::nullopt;
  const engine::FileKind existing = files.kind(request.output, false);
  if (existing != engine::FileKind::regular && existing != engine::FileKind::symlink) return std::nullopt;
  return request.output + " exists; skipped (--skip-existing)";
}

namespace {

/// The output's own checks before any work: a name standard output takes, not a temporary file's,
/// not the input, and not an existing file without --overwrite. Returns --skip-existing's message
/// when the output is there already (nothing to do).
std::optional<std::string> check_output(const CliRequest& req, const std::string& to_stdout, engine::Files& files) {
  if (req.output == "-")
    throw Error(ErrorKind::usage, "OUTPUT '-': name the format of standard output, e.g. png:- or tif:-");
  if (!to_stdout.empty() && (req.compare || req.bench_runs > 0))
    throw Error(ErrorKind::usage, "--compare and --bench print to standard output; write the image to a file");
  if (!to_stdout.empty()) return std::nullopt;
  if (is_temp_file_name(req.output))
    throw Error(ErrorKind::usage, req.output + ": names starting with '" + std::string(kTempFilePrefix) +
                                      "' mark unfinished files, which later runs skip and clean-ups delete; "
                                      "choose another name");
  if (req.input != "-" && files.same_file(req.input, req.output))
    throw Error(ErrorKind::usage, req.output + ": output is the input file; refusing to overwrite it");
  if (auto skipped = skipped_existing_output(req, files)) return skipped;
  // An existing output file is never replaced without --overwrite, as in batch mode (a folder
  // or a device at that name gets load_image's own message).
  const engine::FileKind existing = files.kind(req.output, false);
  const bool exists = existing == engine::FileKind::regular || existing == engine::FileKind::symlink;
  if (!req.overwrite && exists)
    throw Error(ErrorKind::output, req.output + ": exists; left unchanged (use --overwrite to replace it)");
  return std::nullopt;
}

/// The per-image operation's settings from the request: filter, options, limits, output and codec.
engine::RunSettings run_settings(const CliRequest& req, const ConvolveOptions& options, const Filter& filter) {
  engine::RunSettings settings;
  settings.filter = filter;
  settings.convolve = options;
  settings.read_limits.max_pixels = req.max_pixels;
  settings.write = write_options_of(req);
  settings.overwrite = req.overwrite;
  settings.strip_metadata = req.strip_metadata;
  settings.auto_orient = req.auto_orient;
  settings.codec = codec_request(req, options);
  settings.gpu_output = gpu_output_options(req);
  return settings;
}

/// The task's input: req.input, or for "-" a temporary copy of standard input kept in
/// `stdin_copy`. The exit code when a served command is interrupted during the copy.
std::optional<ExitCode> take_input(const CliRequest& req, Session& session, engine::ImageTask& task,
                                   std::optional<StdinCopy>& stdin_copy) {
  if (req.input != "-") {
    task.input = req.input;
    return std::nullopt;
  }
  stdin_copy.emplace(session.in_fd, temp_folder(session), !session.served, session.file_access());
  // Served, a signal during the copy arrives as the client's Interrupt: stop as in-process.
  if (const int signal = session.interrupt_signal(); signal != 0 && session.served) {
    session.log().warn(
        "interrupted by {} while working on standard input (its temporary copy was removed); "
        "nothing was written",
        signal_name(signal));
    return interrupted_exit_code(signal);
  }
  task.input = stdin_copy->path();
  task.input_shown = std::string(kStdinName);
  return std::nullopt;
}

/// Served: the server's least loaded device for a GPU variant, its memory limit, and its running
/// GPU codecs in `settings`; nullopt in a process of its own or for --variant opencv.
std::optional<engine::WarmGpu::Lease> take_lease(Session& session, const ConvolveOptions& options,
                                                 engine::RunSettings& settings) {
  if (session.warm == nullptr || options.variant == Variant::opencv) return std::nullopt;
  std::optional<engine::WarmGpu::Lease> lease(session.warm->take());
  settings.convolve.gpu_memory_limit =
      engine::served_memory_limit(settings.convolve.gpu_memory_limit, session.warm->gpu_memory());
  if (lease->device() >= 0) {
    settings.convolve.device = lease->device();
    settings.warm_codecs = session.warm->gpu_codecs();
    settings.codec.gpu_codec_warm = settings.warm_codecs != nullptr;
  }
  return lease;
}

/// What report_image needs besides the report.
struct RunContext {
  const CliRequest& req;
  const ConvolveOptions& options;
  const engine::RunSettings& settings;
  int served_device;  ///< the leased device; -1: none
  bool warned;        ///< the no-GPU warning was given before the work
  std::string& no_gpu_reason;
};

/// The log lines after the work: the image's notes, why `auto` chose its side, the served device,
/// the no-GPU warning where the CPU filtered without one, fallbacks, and the variant's timings.
void report_image(const engine::ImageReport& report, const RunContext& run, Session& session) {
  spdlog::logger& log = session.log();
  print_notes(report, log);
  // Without a GPU the warning said why the CPU filters; a CPU-or-GPU estimate would only confuse.
  if (!report.auto_reason.empty() && !run.warned) log.info("{}", report.auto_reason);
  if (run.served_device >= 0)
    log.info("served on device {}, the least loaded of the server's{}", run.served_device,
             run.settings.workspace == nullptr
                 ? std::string()
                 : fmt::format("; its kept workspace has made {} device allocation(s) so far",
                               run.settings.workspace->allocations()));
  if (!run.warned && run.options.variant == Variant::automatic && report.variant_used == Variant::opencv &&
      !report.cpu_predicted_faster && report.gpu_fallback.empty() && !engine::gpu_usable(&run.no_gpu_reason))
    if (const auto warning = gpu_warning(session, run.no_gpu_reason)) log.warn("{}", *warning);
  if (!report.decoder_fallback.empty())
    log.info("{}: {}; decoded with OpenCV", run.req.input, in_cli_terms(report.decoder_fallback));
  if (!report.gpu_fallback.empty())
    log.warn("{}; filtered with OpenCV on the CPU instead", in_cli_terms(report.gpu_fallback));
  if (report.variant_used)
    log.info(
        "variant {}: decoder {}, read {:.2f} ms; upload {:.3f} ms, kernel {:.3f} ms, download {:.3f} ms, "
        "{} strip(s); encoder {}",
        to_string(*report.variant_used), report.decoder, report.times.read_ms, report.times.upload_ms,
        report.times.filter_ms, report.times.download_ms, report.strips, report.encoder);
}

/// Writes the encoded result: to standard output, or atomically to req.output under the
/// interrupt guard; a served command's signal stops it before the write, as it would in-process.
ExitCode deliver(const CliRequest& req, const std::string& to_stdout, const engine::ImageTask& task,
                 engine::ImageResult& done, const engine::RunSettings& settings, Session& session) {
  spdlog::logger& log = session.log();
  engine::Files& files = session.file_access();
  const auto t = std::chrono::steady_clock::now();
  if (!to_stdout.empty()) {
    session.print(std::string_view(reinterpret_cast<const char*>(done.encoded.data()), done.encoded.size()));
    log.info("wrote {} ({}) to standard output in {:.2f} ms", to_stdout, req.output, elapsed_ms(t));
    return ExitCode::ok;
  }
  // Served, the client's signal arrives as a message: stop before the write as a process of its
  // own would have stopped (in-process the signal has ended the process before this point).
  if (const int signal = session.interrupt_signal(); signal != 0 && session.served) {
    log.warn("interrupted by {}; {} was not written", signal_name(signal), req.output);
    return interrupted_exit_code(signal);
  }
  engine::ImageTask write_task = task;
  write_task.output = req.output;
  bool written = false;
  {
    std::optional<InterruptGuard> interrupts;
    if (!session.served) interrupts.emplace();
    written = engine::write_image(write_task, done.encoded, settings, files, done.report);
  }
  if (!written) throw Error(ErrorKind::output, req.output + ": exists; not replaced (overwrite is off)");
  log.info("wrote {} in {:.2f} ms", req.output, elapsed_ms(t));
  if (const int signal = session.interrupt_signal(); signal != 0) {
    log.warn("interrupted by {} while writing {}; the file was finished", signal_name(signal), req.output);
    return interrupted_exit_code(signal);
  }
  return ExitCode::ok;
}

}  // namespace

ExitCode run_single_image(const CliRequest& req, const ConvolveOptions& options, Session& session) {
  spdlog::logger& log = session.log();
  engine::Files& files = session.file_access();
  const Filter filter = load_filter_through(files, req.filter_spec, filter_load_options_of(req));
  const std::string to_stdout = stdout_format(req.output);
  if (const auto skipped = check_output(req, to_stdout, files)) {  // a re-run: nothing to do
    log.warn("{}", *skipped);
    return ExitCode::ok;
  }
  engine::RunSettings settings = run_settings(req, options, filter);
  const std::string output_format = format_path(req.output);
  engine::naming(output_format, req.output, [&] { check_encoder_options(output_format, settings.write); });
  // The GPU codec reads and writes files; standard input and output go through OpenCV.
  const bool files_only = req.input != "-" && to_stdout.empty();
  if (!files_only && settings.codec.codec == common::Codec::gpu)
    throw Error(ErrorKind::usage, "--codec gpu reads and writes files, not standard input or output");
  if (!files_only) settings.codec.codec = common::Codec::opencv;

  engine::ImageTask task;
  task.output = output_format;
  task.output_shown = req.output;
  task.keep_encoded = true;  // written below, under the interrupt guard, or to standard output
  std::optional<StdinCopy> stdin_copy;
  if (const auto stopped = take_input(req, session, task, stdin_copy)) return *stopped;

  if (req.compare && options.variant == Variant::opencv)
    throw Error(ErrorKind::usage, "--compare compares a GPU variant with OpenCV; choose a GPU --variant");
  // Without a warm GPU (no server), `auto` takes the CPU where it beats the GPU's start-up; not
  // for --compare and --bench, which are about the GPU's result, nor under --gpu-memory, which
  // asks for the GPU within a limit.
  settings.cpu_when_faster = !session.served && !req.compare && req.bench_runs == 0 && req.gpu_memory.empty();
  // Served: the image goes to the server's least loaded device, and a file a GPU codec takes to
  // its running pipeline there (no set-up left to weigh, so `--codec auto` takes it).
  std::optional<engine::WarmGpu::Lease> lease = take_lease(session, options, settings);
  const engine::Route route = engine::choose_route(task, settings);
  // The host route filters in one of the device's kept workspaces: nothing allocated per image.
  if (lease && !route.on_gpu_codec()) settings.workspace = lease->workspace();
  std::string no_gpu_reason;
  // --compare and --bench are about the GPU's result: without a usable GPU that is said first and
  // alone (exit 5), not after a warning that the image is filtered on the CPU.
  if ((req.compare || req.bench_runs > 0) && !engine::gpu_usable(&no_gpu_reason))
    throw Error(ErrorKind::gpu, std::string(req.compare ? "--compare" : "--bench") + " needs a GPU: " + no_gpu_reason);
  // Without an NVIDIA driver CUDA answers at once: say so before the work, as before any GPU use.
  bool warned = false;
  if (options.variant == Variant::automatic && !route.on_gpu_codec() && !nvidia_driver_loaded() &&
      !engine::gpu_usable(&no_gpu_reason)) {
    if (const auto warning = gpu_warning(session, no_gpu_reason)) log.warn("{}", *warning);
    warned = true;
  }

  log.info("{}", where_it_runs(session));
  ExitCode code = ExitCode::ok;
  const auto start = std::chrono::steady_clock::now();
  TimeMarks marks{start};
  const engine::InspectResult inspect = [&](const cv::Mat& input, const ConvolveResult& result,
                                            const engine::ImageReport& so_far) {
    log.info("read {} ({}x{}, {} channel(s), {})", task.input_shown.empty() ? task.input : task.input_shown, input.cols,
             input.rows, input.channels(), depth_name(input.depth()));
    if (!result.fallback_reason.empty()) no_gpu_reason = result.fallback_reason;
    if (const auto warning = unnormalized_filter_warning(filter, result.image)) log.warn("{}", *warning);
    const Codecs codecs{so_far.decoder,
                        encoder_of(task.output, result.image, encoder_options_for(task.output, settings.write))};
    const auto inspecting = std::chrono::steady_clock::now();
    code = report_bench_and_compare(req, input, result, filter, options, no_gpu_reason, codecs, session);
    if (req.compare || req.bench_runs > 0) marks.inspect_ms = common::ms_without_loads(inspecting);
    return code == ExitCode::ok;
  };
  engine::ImageResult done = engine::process_image(task, settings, route, files, inspect);
  report_image(done.report, {req, options, settings, lease ? lease->device() : -1, warned, no_gpu_reason}, session);
  if (code != ExitCode::ok) {
    log.error("{}: result differs from cv::filter2D beyond the tolerance; output not written", req.output);
    return code;
  }
  log.info("processed in {:.2f} ms", elapsed_ms(start));
  const auto delivering = std::chrono::steady_clock::now();
  const ExitCode delivered = deliver(req, to_stdout, task, done, settings, session);
  marks.deliver_ms = common::ms_without_loads(delivering);
  if (delivered == ExitCode::ok && log.should_log(spdlog::level::info))
    for (const std::string& line : time_account(session, done.report.times, marks)) log.info("{}", line);
  return delivered;
}

}  // namespace cuconv::cli
