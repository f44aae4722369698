// Batch mode of the command line: gathers the inputs, plans names and the shard, checks what can
// be checked before any image is read, runs the batch engine and reports (log lines, a progress
// line on a terminal, the JSON summary).
#include "cli/batch_command.hpp"

#include "cli/interrupt.hpp"
#include "cli/library_messages.hpp"
#include "engine/batch_plan.hpp"
#include "engine/batch_pipeline.hpp"
#include "engine/image_operation.hpp"
#include "common/whole_number.hpp"

#include <cuconv/image_io.hpp>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <iostream>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

namespace cuconv::cli {

namespace {

namespace fs = std::filesystem;
using batch::BatchSummary;
using batch::ItemReport;
using batch::ItemStatus;

/// "done/total, images/s, ETA" on the session's stderr, redrawn in place at most ten times a
/// second. Only on a terminal: in a log file the carriage returns would be noise.
class ProgressLine {
 public:
  ProgressLine(bool enabled, std::size_t total, int fd)
      : enabled_(enabled), total_(total), start_(Clock::now()), fd_(fd) {}

  void update(std::size_t done) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
    // Capped at 99:59:59 so a stalled start cannot overflow the conversion to int.
    const double eta = rate > 0 ? std::min(static_cast<double>(total_ - done) / rate, 359999.0) : 0.0;
    const int eta_s = static_cast<int>(eta);
    draw(fmt::format("\r\033[K{}/{} images, {:.1f} images/s, ETA {}:{:02}:{:02}", done, total_, rate, eta_s / 3600,
                     eta_s / 60 % 60, eta_s % 60));
    drawn_ = true;
  }

  /// Erases the line so that a log line can take its place (the next update redraws it).
  void clear() {
    if (!drawn_) return;
    draw("\r\033[K");
    drawn_ = false;
    last_draw_ = {};
  }

  /// Leaves the last state on screen.
  void finish() {
    if (drawn_) draw("\n");
    drawn_ = false;
  }

 private:
  void draw(std::string_view text) const {
    while (!text.empty()) {
      const ssize_t n = ::write(fd_, text.data(), text.size());
      if (n <= 0) return;  // the progress line is a courtesy: a closed terminal stops it
      text.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  using Clock = std::chrono::steady_clock;
  bool enabled_;
  std::size_t total_;
  Clock::time_point start_;
  Clock::time_point last_draw_{};
  bool drawn_ = false;
  int fd_;
};

/// A path the user named: on the command line, or in a --from list.
struct NamedInput {
  std::string path;
  std::string list;  ///< the --from list that named it; empty: the command line
};

/// Everything readable from descriptor `fd` (a --from list on standard input).
std::string read_all(int fd) {
  std::string text;
  char buffer[1 << 14];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorKind::bad_input, "--from -: cannot read standard input");
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

/// The named inputs plus those of every --from list (opened through the session's file access).
std::vector<NamedInput> named_inputs(const BatchRequest& request, Session& session) {
  std::vector<NamedInput> named;
  for (const std::string& path : request.inputs) named.push_back({path, {}});
  engine::Files& files = session.file_access();
  for (const std::string& list : request.from_lists) {
    std::vector<std::string> paths;
    if (list == "-") {
      std::istringstream in(read_all(session.in_fd));
      paths = batch::read_path_list(in);
    } else {
      if (files.kind(list, true) == engine::FileKind::directory)
        throw Error(ErrorKind::bad_input, "--from " + list + ": is a directory, not a list of paths");
      const engine::OpenedFile file = files.open_input(list);
      std::ifstream in(file.local_path());
      if (!in) throw Error(ErrorKind::bad_input, "--from " + list + ": cannot read the list of paths");
      paths = batch::read_path_list(in);
    }
    for (std::string& path : paths) named.push_back({std::move(path), list == "-" ? "standard input" : list});
  }
  return named;
}

/// Throws Error{bad_input} naming the first input that does not exist (and counting the others):
/// a mistyped folder or a stale list is reported before anything is created.
void check_inputs_exist(const std::vector<NamedInput>& named, engine::Files& files) {
  const NamedInput* first = nullptr;
  std::size_t missing = 0;
  for (const NamedInput& input : named) {
    if (files.kind(input.path, true) != engine::FileKind::none) continue;
    if (first == nullptr) first = &input;
    ++missing;
  }
  if (first == nullptr) return;
  std::string message = "input '" + first->path + "'" + (first->list.empty() ? "" : " (listed in " + first->list + ")") +
                        " does not exist";
  if (missing > 1) message += "; " + std::to_string(missing - 1) + " more named input(s) do not exist either";
  throw Error(ErrorKind::bad_input, message);
}

/// Throws Error{output} unless every output's extension names a format cuconv writes; without an
/// extension (an input without one, kept by a --name without one) it says so and how to name one.
/// Throws Error{usage} when --quality or --compression does not fit an output format.
void check_output_names(const std::vector<batch::BatchItem>& items, const WriteOptions& write) {
  std::set<std::string> checked;  // each extension once
  for (const batch::BatchItem& item : items) {
    const std::string extension = fs::path(item.output).extension().string();
    if (extension.empty())
      throw Error(ErrorKind::output, item.output + ": has no extension to pick the output format (the input " +
                                         item.input + " has none): name one with --name, e.g. --name '%s.png'");
    if (checked.insert(extension).second) {
      check_output_extension(item.output);
      check_encoder_options(item.output, write);  // --quality on a PNG: refused before the batch starts
    }
  }
}

/// --devices: "all" or a comma-separated list of device indices. `uses_gpu` false (the opencv
/// variant, --no-filter) ignores it; no devices means the current one (or the CPU fallback).
std::vector<int> parse_devices(const std::string& text, bool uses_gpu) {
  if (text.empty() || !uses_gpu) return {};
  const int count = cuda_device_count();
  if (text == "all") {
    std::vector<int> all(static_cast<std::size_t>(count));
    for (int d = 0; d < count; ++d) all[static_cast<std::size_t>(d)] = d;
    return all;  // none: the CPU fallback, announced with the no-device warning
  }
  std::vector<int> devices;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view field = rest.substr(0, comma);
    const std::optional<int> parsed = detail::parse_whole_number<int>(field);
    if (!parsed || *parsed < 0)
      throw Error(ErrorKind::usage, "--devices '" + text + "': expected 'all' or device indices like 0,1");
    const int device = *parsed;
    if (std::find(devices.begin(), devices.end(), device) != devices.end())
      throw Error(ErrorKind::usage, "--devices '" + text + "': device " + std::to_string(device) + " is named twice");
    devices.push_back(device);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (count == 0) throw Error(ErrorKind::gpu, "--devices " + text + ": no usable CUDA device");
  for (int device : devices)
    if (device >= count)
      throw Error(ErrorKind::usage, "--devices " + text + ": there is no device " + std::to_string(device) + " (" +
                                        std::to_string(count) + " CUDA device(s): 0.." + std::to_string(count - 1) + ")");
  return devices;
}

/// Where the time before the pipeline went, and what it found out.
struct StartupTimes {
  double startup_ms = 0;   ///< from main() to the pipeline's start: options, filter, input listing
  double gpu_init_ms = 0;  ///< CUDA's initialisation (the device check), beside the above and the first decodes
  std::string no_gpu_reason;  ///< why `auto` filters with OpenCV; empty when a GPU is usable
};

/// The filter as it was applied: where it came from, its weights, and every option that shapes
/// the result, so that a summary says exactly what each output is.
nlohmann::json filter_json(const Filter& filter, const ConvolveOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < filter.height; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < filter.width; ++c) row.push_back(filter.at(r, c));
    rows.push_back(std::move(row));
  }
  return {{"origin", filter.origin},
          {"width", filter.width},
          {"height", filter.height},
          {"anchor", {options.anchor_x >= 0 ? options.anchor_x : filter.resolved_anchor_x(),
                      options.anchor_y >= 0 ? options.anchor_y : filter.resolved_anchor_y()}},
          {"offset", filter.offset},
          {"weights", rows},
          {"border", std::string(to_string(options.border))},
          {"border_value", options.border_value},
          {"depth", std::string(to_string(options.depth))},
          {"delta", options.delta},
          {"alpha", options.keep_alpha ? "keep" : "filter"}};
}

/// Why `item` was filtered with OpenCV although `requested` was `auto`; empty otherwise.
std::string variant_reason(const ItemReport& item, Variant requested, const std::string& no_gpu_reason) {
  if (!item.gpu_fallback.empty()) return item.gpu_fallback;
  if (requested == Variant::automatic && item.variant_used == Variant::opencv)
    return "no usable CUDA device" + (no_gpu_reason.empty() ? std::string() : ": " + no_gpu_reason);
  return {};
}

nlohmann::json summary_json(const BatchSummary& summary, ExitCode exit_code, int signal, const batch::Shard& shard,
                            const batch::BatchOptions& options, const StartupTimes& startup) {
  nlohmann::json files = nlohmann::json::array();
  for (const ItemReport& item : summary.items) {
    files.push_back({{"input", item.input},
                     {"output", item.output},
                     {"status", std::string(engine::to_string(item.status))},
                     {"reason", item.reason},
                     {"exit_code", static_cast<int>(item.exit_code)},
                     {"device", item.device},
                     {"variant", item.variant_used ? nlohmann::json(std::string(to_string(*item.variant_used)))
                                                   : nlohmann::json()},
                     {"variant_reason", variant_reason(item, options.run.convolve.variant, startup.no_gpu_reason)},
                     {"decoder", item.decoder},
                     {"decoder_reason", item.decoder_fallback},
                     {"encoder", item.encoder},
                     {"timings",
                      {{"read_ms", item.times.read_ms},
                       {"filter_ms", item.times.filter_ms},
                       {"upload_ms", item.times.upload_ms},
                       {"download_ms", item.times.download_ms},
                       {"write_ms", item.times.write_ms},
                       {"total_ms", item.times.total_ms}}}});
  }
  const double seconds = summary.wall_ms / 1000.0;
  return {{"files", files},
          {"totals",
           {{"inputs", summary.items.size()},
            {"ok", summary.ok},
            {"failed", summary.failed},
            {"skipped", summary.skipped},
            {"existing_outputs", summary.existing_outputs},
            {"written_by_another_process", summary.lost_races},
            {"not_started", summary.not_started},
            {"wall_ms", summary.wall_ms},
            {"startup_ms", startup.startup_ms},
            {"gpu_init_ms", startup.gpu_init_ms},
            {"gpu_setup_ms", summary.gpu_setup_ms},
            {"peak_images_held", summary.peak_images_held},
            {"gpu_jpeg",
             {{"batches", summary.gpu_jpeg.batches},
              {"files", summary.gpu_jpeg.files},
              {"setup_ms", summary.gpu_jpeg.setup_ms},
              {"decode_ms", summary.gpu_jpeg.decode_ms},
              {"decoder_waiting_ms", summary.gpu_jpeg.decoder_waiting_ms},
              {"decoder_blocked_ms", summary.gpu_jpeg.decoder_blocked_ms},
              {"encode_ms", summary.gpu_jpeg.encode_ms},
              {"encoders_waiting_ms", summary.gpu_jpeg.encoders_waiting_ms},
              {"first_result_ms", summary.gpu_jpeg.first_result_ms},
              {"last_result_ms", summary.gpu_jpeg.last_result_ms}}},
            {"images_per_s", seconds > 0 ? static_cast<double>(summary.ok) / seconds : 0.0}}},
          {"exit_code", static_cast<int>(exit_code)},
          {"interrupted_by", signal != 0 ? nlohmann::json(signal_name(signal)) : nlohmann::json()},
          {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)},
          {"filter", !options.run.apply_filter ? nlohmann::json("none (--no-filter)")
                                               : filter_json(options.run.filter, options.run.convolve)},
          {"variant", std::string(to_string(options.run.convolve.variant))},
          {"jobs", options.jobs},
          {"gpu_threads", !options.run.apply_filter ? 0 : options.filter_threads_per_device},
          {"devices", options.devices}};
}

void log_outcome(const BatchSummary& summary, bool fail_fast, int signal, spdlog::logger& log) {
  if (summary.existing_outputs > 0)
    log.warn("{} output(s) already existed and were left unchanged (use --overwrite to replace them){}",
                 summary.existing_outputs,
                 summary.lost_races > 0
                     ? fmt::format("; {} of them were written by another process while this one ran", summary.lost_races)
                     : std::string());
  if (signal != 0)
    log.warn("interrupted by {}: {} written, {} not started; run the same command again to finish",
                 signal_name(signal), summary.ok, summary.not_started);
  if (summary.failed > 0)
    log.error("{} of {} input(s) failed{}", summary.failed, summary.items.size(),
                  fail_fast ? "; stopped at the first failure (--fail-fast)" : "");
  const double seconds = summary.wall_ms / 1000.0;
  log.info("batch: {} ok, {} failed, {} skipped in {:.2f} s ({:.1f} images/s)", summary.ok, summary.failed,
               summary.skipped, seconds, seconds > 0 ? static_cast<double>(summary.ok) / seconds : 0.0);
  if (const auto& j = summary.gpu_jpeg; j.batches > 0)
    log.info("GPU JPEG: set-up {:.0f} ms; {} files in {} decode calls; decoder busy {:.0f} ms, waiting for files "
                 "{:.0f} ms, for encoders {:.0f} ms; encoder threads busy {:.0f} ms, waiting {:.0f} ms (summed)",
                 j.setup_ms, j.files, j.batches, j.decode_ms, j.decoder_waiting_ms, j.decoder_blocked_ms, j.encode_ms,
                 j.encoders_waiting_ms);
}

/// The device check that runs beside the first decodes: its time, and why no GPU is usable.
struct GpuCheck {
  double ms = 0;
  std::string no_gpu_reason;  ///< empty: a CUDA device is usable
};

/// Throws Error{gpu} when `variant` needs a CUDA device and none is usable (every image would
/// fail the same way); under `auto` it warns, and each image falls back to OpenCV.
GpuCheck check_gpu(Variant variant, spdlog::logger& log) {
  const auto start = std::chrono::steady_clock::now();
  GpuCheck check;
  if (!engine::gpu_usable(&check.no_gpu_reason)) {
    if (variant != Variant::automatic)
      throw Error(ErrorKind::gpu, "variant '" + std::string(to_string(variant)) + "' needs a CUDA device: " +
                                      check.no_gpu_reason + " (use --variant opencv or auto)");
    log.warn("no usable CUDA device ({}); filtering with OpenCV on the CPU", check.no_gpu_reason);
  }
  check.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return check;
}

}  // namespace

ExitCode run_batch_command(const BatchRequest& request, const Filter& filter, const ConvolveOptions& options,
                           const codec::CodecRequest& codec_in, const codec::JpegOutputOptions& jpeg_output,
                           Session& session) {
  spdlog::logger& log = session.log();
  engine::Files& files = session.file_access();
  // CUDA's initialisation runs beside the input listing and the first decodes; the filter
  // threads wait for it (BatchOptions::wait_for_gpu), and the no-device error stops the batch
  // before any output is written.
  const bool uses_gpu = !request.no_filter && options.variant != Variant::opencv;
  std::shared_future<GpuCheck> gpu_check;
  if (uses_gpu) gpu_check = std::async(std::launch::async, check_gpu, options.variant, std::ref(log)).share();

  // From here on SIGINT and SIGTERM only set a flag: the batch stops taking images, lets the
  // writes in flight finish (no temporary file is left), reports, and exits 130 or 143. A served
  // command's signals reach its client, not the server.
  std::optional<InterruptGuard> interrupts;
  if (!session.served) interrupts.emplace();

  // Everything that can be checked without reading an image is checked here, before the output
  // folder or any file is created.
  const std::vector<NamedInput> named = named_inputs(request, session);
  if (named.empty()) throw Error(ErrorKind::usage, "no inputs: name images or directories, or use --from FILE");
  check_inputs_exist(named, files);
  std::vector<std::string> named_paths;
  for (const NamedInput& input : named) named_paths.push_back(input.path);
  const std::vector<std::string> inputs = batch::collect_inputs(named_paths, request.recursive, files);
  if (inputs.empty()) throw Error(ErrorKind::bad_input, "no images found in the directories given");

  batch::check_name_template(request.name_template, inputs.size());
  const std::vector<batch::BatchItem> all_items = batch::plan_outputs(inputs, request.out_dir, request.name_template);
  const batch::Shard shard = !request.shard.empty()
                                 ? batch::parse_shard(request.shard)
                                 : batch::slurm_array_shard(std::getenv).value_or(batch::Shard{});
  const std::vector<batch::BatchItem> items = batch::select_shard(all_items, shard);
  log.info("{} input(s); shard {}/{}: {} of them", all_items.size(), shard.index, shard.count, items.size());
  check_output_names(items, request.write);
  for (const batch::BatchItem& item : items)
    if (files.same_file(item.input, item.output))
      throw Error(ErrorKind::usage, item.output + ": output is the input file; refusing to overwrite it");

  batch::BatchOptions batch_options;
  engine::RunSettings& run = batch_options.run;
  run.filter = filter;
  run.apply_filter = !request.no_filter;
  run.convolve = options;
  run.read_limits.max_pixels = request.max_pixels;
  run.write = request.write;
  run.overwrite = request.overwrite;
  run.strip_metadata = request.strip_metadata;
  run.auto_orient = request.auto_orient;
  run.jpeg_output = jpeg_output;
  // JPEG -> JPEG items take the GPU codec when it is usable (asked once, and only if some item is
  // JPEG -> JPEG); --codec auto weighs their number against OpenCV's codec threads (--jobs);
  // --codec gpu without it stops here, before any work (exit 5).
  run.codec = codec_in;
  run.codec.jpeg_jobs = static_cast<std::size_t>(std::count_if(items.begin(), items.end(), [](const batch::BatchItem& item) {
    return codec::is_jpeg_path(item.input) && codec::is_jpeg_path(item.output);
  }));
  run.codec.cpu_threads = request.jobs;
  auto gpu_codec_reason = std::make_shared<std::optional<std::string>>();
  run.gpu_codec_unusable = [gpu_codec_reason] {
    if (!*gpu_codec_reason) *gpu_codec_reason = codec::gpu_codec_unusable_reason();
    return **gpu_codec_reason;
  };
  // Each item's route, once: the pipeline takes them as they are.
  bool any_gpu_codec = false;
  for (const batch::BatchItem& item : items) {
    batch_options.routes.push_back(engine::choose_route({item.input, item.output, {}, {}, false}, run));
    any_gpu_codec = any_gpu_codec || batch_options.routes.back() == engine::Route::gpu_jpeg;
  }
  if (run.codec.jpeg_jobs > 0 && run.codec.codec == codec::Codec::automatic) {
    const std::size_t threshold = codec::auto_gpu_codec_threshold(run.codec.cpu_threads);
    if (any_gpu_codec)
      log.info("{} JPEG -> JPEG file(s): GPU codec (--codec auto takes it from {} such files)", run.codec.jpeg_jobs,
               threshold);
    else if (run.codec.jpeg_jobs < threshold)
      log.info("{} JPEG -> JPEG file(s): OpenCV's codec (--codec auto takes the GPU codec from {} such files, "
               "where its set-up pays off)", run.codec.jpeg_jobs, threshold);
    else
      log.info("{} JPEG -> JPEG file(s): OpenCV's codec (the GPU codec is not usable here{})", run.codec.jpeg_jobs,
               *gpu_codec_reason && !(*gpu_codec_reason)->empty() ? ": " + **gpu_codec_reason : std::string());
  }
  batch_options.files = &files;
  batch_options.fail_fast = request.fail_fast;
  batch_options.jobs = request.jobs > 0 ? request.jobs : std::max(1U, std::thread::hardware_concurrency());
  if (request.gpu_threads > 0) batch_options.filter_threads_per_device = request.gpu_threads;
  batch_options.devices = parse_devices(request.devices, uses_gpu || any_gpu_codec);
  if (uses_gpu) batch_options.wait_for_gpu = [gpu_check] { gpu_check.get(); };

  if (const int signal = received_signal(); signal != 0) {
    log.warn("interrupted by {} before any work; nothing written", signal_name(signal));
    return interrupted_exit_code(signal);
  }
  files.make_directories(request.out_dir);

  // Made before the work, so an unwritable summary path fails before any image is processed.
  const bool json_file = !request.json_path.empty() && request.json_path != "-";
  if (json_file && !files.write_output(request.json_path, {}, true))
    throw Error(ErrorKind::output, request.json_path + ": cannot write the JSON summary");

  ProgressLine progress(!request.quiet && ::isatty(session.err_fd) != 0, items.size(), session.err_fd);
  const batch::ItemObserver report_item = [&](const ItemReport& item, std::size_t done, std::size_t) {
    const auto level = item.status == ItemStatus::failed ? spdlog::level::err
                       : item.gpu_fallback.empty()        ? spdlog::level::info
                                                          : spdlog::level::warn;
    if (log.should_log(level) || !item.notes.empty()) {
      progress.clear();
      for (const engine::ImageNote& note : item.notes) {
        if (note.level == engine::ImageNote::Level::warning) log.warn("{}: {}", item.input, note.text);
      }
      if (!item.gpu_fallback.empty())
        log.warn("{}: {}; filtered with OpenCV on the CPU instead", item.input, item.gpu_fallback);
      if (!item.decoder_fallback.empty()) log.info("{}: {}; decoded with OpenCV", item.input, item.decoder_fallback);
      if (item.status == ItemStatus::failed)
        log.error("{}: {}", item.input, item.reason);
      else if (item.status == ItemStatus::ok)
        log.info("{} -> {} ({:.1f} ms)", item.input, item.output, item.times.total_ms);
      else
        log.info("{}: skipped: {}", item.input, item.reason);
    }
    progress.update(done);
  };
  batch_options.stop_requested = [] { return received_signal() != 0; };
  const auto pipeline_start = std::chrono::steady_clock::now();
  const BatchSummary summary = [&] {
    try {
      return batch::run_batch(items, batch_options, report_item);
    } catch (...) {
      // The batch did not run (no usable GPU, or a thread could not start): leave no empty summary.
      if (json_file) files.remove(request.json_path);
      throw;
    }
  }();
  progress.finish();
  // A signal that came after the last image still ends the process as interrupted.
  const int signal = received_signal();
  const ExitCode exit_code = signal != 0 ? interrupted_exit_code(signal) : summary.exit_code;
  log_outcome(summary, request.fail_fast, signal, log);

  if (!request.json_path.empty()) {
    StartupTimes startup;
    startup.startup_ms = std::chrono::duration<double, std::milli>(pipeline_start - session.started).count();
    if (gpu_check.valid()) startup.gpu_init_ms = gpu_check.get().ms;
    startup.no_gpu_reason = gpu_check.valid() ? gpu_check.get().no_gpu_reason : std::string();
    const std::string text = summary_json(summary, exit_code, signal, shard, batch_options, startup).dump(2) + "\n";
    if (request.json_path == "-") {
      session.print(text);
    } else if (!files.write_output(request.json_path,
                                   std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), true)) {
      throw Error(ErrorKind::output, request.json_path + ": cannot write the JSON summary");
    }
  }
  return exit_code;
}

}  // namespace cuconv::cli
