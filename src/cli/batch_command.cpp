// SPDX-License-Identifier: Apache-2.0
// Batch mode of the command line: gathers the inputs, plans names and the shard, checks what can
// be checked before any image is read, runs the batch engine and reports (log lines, a progress
// line on a terminal, the JSON summary).
#include "cli/batch_command.hpp"
#include "cli/option_names.hpp"

#include "cli/batch_report.hpp"
#include "cli/device_list.hpp"
#include "cli/interrupt.hpp"
#include "cli/json_text.hpp"
#include "cli/library_messages.hpp"
#include "common/whole_number.hpp"
#include "common/write_all.hpp"
#include "engine/batch_pipeline.hpp"
#include "engine/batch_plan.hpp"
#include "engine/image_operation.hpp"
#include "engine/warm_gpu.hpp"

#include <cuconv/image_io.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

namespace cuconv::cli {

namespace {

namespace fs = std::filesystem;
using engine::BatchSummary;
using engine::ItemReport;
using engine::ItemStatus;

/// A path the user named: on the command line, or in a --from list.
struct NamedInput {
  std::string path;
  std::string list;  ///< the --from list that named it; empty: the command line
};

/// Everything readable from descriptor `fd` (a --from list on standard input).
std::string read_all(int fd) {
  std::string text;
  char buffer[1 << 14];
  if (common::read_to_end(fd, buffer, [&](std::string_view chunk) { text += chunk; }) != 0)
    throw Error(ErrorKind::bad_input, "--from -: cannot read standard input");
  return text;
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
      paths = engine::read_path_list(in, "standard input");
    } else {
      if (files.kind(list, true) == engine::FileKind::directory)
        throw Error(ErrorKind::bad_input, "--from " + list + ": is a directory, not a list of paths");
      const engine::OpenedFile file = files.open_input(list);
      std::ifstream in(file.local_path());
      if (!in) throw Error(ErrorKind::bad_input, "--from " + list + ": cannot read the list of paths");
      paths = engine::read_path_list(in, list);
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
  std::string message = "input '" + first->path + "'" +
                        (first->list.empty() ? "" : " (listed in " + first->list + ")") + " " +
                        engine::why_unreachable(first->path, files);
  if (missing > 1) message += "; " + std::to_string(missing - 1) + " more named input(s) do not exist either";
  throw Error(ErrorKind::bad_input, message);
}

/// Throws Error{output} unless every output's extension names a format cuconv writes; without an
/// extension (an input without one, kept by a --name without one) it says so and how to name one.
void check_output_names(const std::vector<engine::BatchItem>& items) {
  std::set<std::string> checked;  // each extension once
  for (const engine::BatchItem& item : items) {
    const std::string extension = fs::path(item.output).extension().string();
    if (extension.empty())
      throw Error(ErrorKind::output, item.output + ": has no extension to pick the output format (the input " +
                                         item.input + " has none): name one with --name, e.g. --name '%s.png'");
    if (checked.insert(extension).second) check_output_extension(item.output);
  }
}

/// --quality and --compression in a batch, whose outputs may have several formats: each output
/// is written with the share its format takes (encoder_options_for), so `--quality 90` is for the
/// JPEG and WebP files and does not refuse the PNG files beside them (the values themselves are
/// checked by the command line: a quality of 1-100, a PNG level or a TIFF codec). Returns one
/// warning per option that some outputs are written without, naming a few of them.
std::vector<std::string> encoder_option_notes(const std::vector<engine::BatchItem>& items, const WriteOptions& write) {
  struct Ignored {
    std::string option;
    std::string takes;  ///< the outputs that take it
    std::vector<std::string> outputs;
  };
  Ignored quality{"--quality " + (write.quality ? std::to_string(*write.quality) : std::string()), "JPEG and WebP", {}};
  Ignored compression{"--compression " + write.compression, write.compression.size() == 1 ? "PNG" : "TIFF", {}};
  for (const engine::BatchItem& item : items) {
    const WriteOptions share = encoder_options_for(item.output, write);
    if (write.quality && !share.quality) quality.outputs.push_back(item.output);
    if (!write.compression.empty() && share.compression.empty()) compression.outputs.push_back(item.output);
  }
  std::vector<std::string> notes;
  for (const Ignored& ignored : {quality, compression}) {
    if (ignored.outputs.empty()) continue;
    constexpr std::size_t kNamed = 3;
    std::string named;
    for (std::size_t i = 0; i < std::min(kNamed, ignored.outputs.size()); ++i)
      named += (i == 0 ? "" : ", ") + ignored.outputs[i];
    if (ignored.outputs.size() > kNamed) named += ", ...";
    notes.push_back(ignored.option + " applies to " + ignored.takes + " outputs; " +
                    std::to_string(ignored.outputs.size()) + " of " + std::to_string(items.size()) +
                    " output(s) are written without it (" + named + ")");
  }
  return notes;
}

/// Throws Error{output} naming `out_dir` when no file can be created in it (no write permission, a
/// read-only file system): said once, before any image is read, rather than once per image after
/// the work. A file of a name no batch uses is written there through `files` and removed again.
void check_output_folder_writable(const std::string& out_dir, engine::Files& files) {
  std::random_device random;
  const std::string probe =
      (fs::path(out_dir) / fmt::format(".cuconv-write-check-{:08x}{:08x}", random(), random())).string();
  try {
    (void)files.write_output(probe, {}, false);
  } catch (const Error& e) {
    std::string why = e.what();
    if (why.starts_with(probe + ": ")) why.erase(0, probe.size() + 2);
    throw Error(ErrorKind::output, out_dir + ": cannot write into the output folder: " + why);
  }
  files.remove(probe);
}

/// The device check that runs beside the first decodes: its time, and why no GPU is usable.
struct GpuCheck {
  double ms = 0;
  std::string no_gpu_reason;  ///< empty: a CUDA device is usable
};

/// Throws Error{gpu} when `variant` needs a CUDA device and none is usable (every image would
/// fail the same way); under `auto` it warns, and each image falls back to OpenCV.
GpuCheck check_gpu(Variant variant, const Session& session, spdlog::logger& log) {
  const auto start = std::chrono::steady_clock::now();
  GpuCheck check;
  if (!engine::gpu_usable(&check.no_gpu_reason)) {
    if (variant != Variant::automatic)
      throw Error(ErrorKind::gpu, "variant '" + std::string(to_string(variant)) + "' needs a CUDA device: " +
                                      check.no_gpu_reason + " (use --variant opencv or auto)");
    if (const auto warning = gpu_warning(session, check.no_gpu_reason)) log.warn("{}", *warning);
  }
  check.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return check;
}

}  // namespace

namespace {

/// This task's items, each input with its output: the named inputs and --from lists (which must
/// exist), the images found in folders, their outputs under --out-dir by the name template, and
/// this shard's part of them (--shard, or Slurm's array task); the output names checked.
struct PlannedItems {
  std::vector<engine::BatchItem> items;
  engine::Shard shard;
};
PlannedItems plan_items(const BatchRequest& request, Session& session) {
  engine::Files& files = session.file_access();
  const std::vector<NamedInput> named = named_inputs(request, session);
  if (named.empty()) throw Error(ErrorKind::usage, "no inputs: name images or directories, or use --from FILE");
  check_inputs_exist(named, files);
  std::vector<std::string> named_paths;
  for (const NamedInput& input : named) named_paths.push_back(input.path);
  const std::vector<std::string> inputs = engine::collect_inputs(named_paths, request.recursive, files);
  if (inputs.empty()) throw Error(ErrorKind::bad_input, "no images found in the directories given");

  engine::check_name_template(request.name_template, inputs.size());
  const std::vector<engine::BatchItem> all_items =
      engine::plan_outputs(inputs, request.out_dir, request.name_template, {files, session.caller_folder()});
  const engine::Shard shard = !request.shard.empty() ? engine::parse_shard(request.shard)
                                                     : engine::slurm_array_shard([&session](const char* name) {
                                                         return session.getenv(name);
                                                       }).value_or(engine::Shard{});
  const std::vector<engine::BatchItem> items = engine::select_shard(all_items, shard);
  session.log().info("{} input(s); shard {}/{}: {} of them", all_items.size(), shard.index, shard.count, items.size());
  check_output_names(items);
  return {items, shard};
}

/// Why each GPU codec asked is not usable here (empty: usable), asked once per codec.
using GpuCodecReasons = std::map<const codec::GpuCodecFormat*, std::string>;

/// The per-image operation's settings for the batch: the filter, the options, the codecs' and
/// the GPU codec's (asked once per codec whether it is usable, and only if some item is such).
engine::RunSettings batch_run_settings(const BatchRequest& request, const Filter& filter,
                                       const ConvolveOptions& options, const engine::CodecRequest& codec_in,
                                       const codec::GpuOutputOptions& gpu_output,
                                       const std::vector<engine::BatchItem>& items, const Session& session,
                                       const std::shared_ptr<GpuCodecReasons>& gpu_codec_reasons) {
  engine::RunSettings run;
  run.filter = filter;
  run.apply_filter = !request.no_filter;
  run.convolve = options;
  if (session.warm != nullptr)
    run.convolve.gpu_memory_limit = engine::served_memory_limit(options.gpu_memory_limit, session.warm->gpu_memory());
  run.read_limits.max_pixels = request.max_pixels;
  run.write = request.write;
  run.overwrite = request.overwrite;
  run.strip_metadata = request.strip_metadata;
  run.auto_orient = request.auto_orient;
  run.gpu_output = gpu_output;
  // Items a GPU codec can take (JPEG -> JPEG) take it when it is usable (asked once per codec,
  // and only if some item is such); --codec auto weighs their number against OpenCV's codec
  // threads (--jobs); --codec gpu without it stops here, before any work (exit 5).
  run.codec = codec_in;
  run.codec.gpu_codec_jobs =
      static_cast<std::size_t>(std::count_if(items.begin(), items.end(), [](const engine::BatchItem& item) {
        return codec::gpu_codec_for(item.input, item.output);
      }));
  run.codec.cpu_threads = request.jobs;
  run.gpu_codec_unusable = [gpu_codec_reasons](const codec::GpuCodecFormat& gpu_codec) {
    const auto [at, asked] = gpu_codec_reasons->try_emplace(&gpu_codec);
    if (asked) at->second = engine::gpu_codec_unusable_reason(gpu_codec);
    return at->second;
  };
  return run;
}

/// Each item's route, once, into batch_options.routes (the pipeline takes them as they are), and
/// a line on which codec the files a GPU codec can take go to and why. Whether any goes to one.
bool choose_routes(const std::vector<engine::BatchItem>& items, engine::BatchOptions& batch_options,
                   const GpuCodecReasons& reasons, spdlog::logger& log) {
  bool any_gpu_codec = false;
  for (const engine::BatchItem& item : items) {
    batch_options.routes.push_back(engine::choose_route({item.input, item.output, {}, {}, false}, batch_options.run));
    any_gpu_codec = any_gpu_codec || batch_options.routes.back().on_gpu_codec();
  }
  if (batch_options.run.codec.gpu_codec_jobs > 0 && batch_options.run.codec.codec == common::Codec::automatic) {
    const std::size_t jobs = batch_options.run.codec.gpu_codec_jobs;
    const std::size_t threshold = engine::auto_gpu_codec_threshold(batch_options.run.codec.cpu_threads);
    std::string why_not;
    for (const auto& [gpu_codec, reason] : reasons)
      if (!reason.empty()) why_not += ": " + std::string(gpu_codec->format) + ": " + reason;
    if (any_gpu_codec)
      log.info("{} file(s) a GPU codec can take: GPU codec (--codec auto takes it from {} such files)", jobs,
               threshold);
    else if (jobs < threshold)
      log.info(
          "{} file(s) a GPU codec can take: OpenCV's codec (--codec auto takes the GPU codec from {} such files, "
          "where its set-up pays off)",
          jobs, threshold);
    else
      log.info("{} file(s) a GPU codec can take: OpenCV's codec (the GPU codec is not usable here{})", jobs, why_not);
  }
  return any_gpu_codec;
}

/// The observer that logs each finished item (its notes, fallbacks, failure or skip at error,
/// warning or info level) and moves the progress line.
engine::ItemObserver item_reporter(ProgressLine& progress, spdlog::logger& log) {
  return [&progress, &log](const ItemReport& item, std::size_t done, std::size_t) {
    const auto level = item.status == ItemStatus::failed ? spdlog::level::err
                       : item.gpu_fallback.empty()       ? spdlog::level::info
                                                         : spdlog::level::warn;
    if (log.should_log(level) || !item.notes.empty()) {
      progress.clear();
      for (const engine::ImageNote& note : item.notes) {  // each names its file already
        if (note.level == engine::ImageNote::Level::warning) log.warn("{}", in_cli_terms(note.text));
      }
      if (!item.gpu_fallback.empty())
        log.warn("{}: {}; filtered with OpenCV on the CPU instead", item.input, in_cli_terms(item.gpu_fallback));
      if (!item.decoder_fallback.empty())
        log.info("{}: {}; decoded with OpenCV", item.input, in_cli_terms(item.decoder_fallback));
      if (item.status == ItemStatus::failed)
        log.error("{}: {}", item.input, in_cli_terms(item.reason));
      else if (item.status == ItemStatus::ok)
        log.info("{} -> {} ({:.1f} ms)", item.input, item.output, item.times.total_ms);
      else
        log.info("{}: skipped: {}", item.input, in_cli_terms(item.reason));
    }
    progress.update(done);
  };
}

/// How the batch started: the time to its pipeline, the GPU check's time and finding, the server.
StartupTimes startup_times(const Session& session, std::chrono::steady_clock::time_point pipeline_start,
                           const std::shared_future<GpuCheck>& gpu_check) {
  StartupTimes startup;
  startup.startup_ms = std::chrono::duration<double, std::milli>(pipeline_start - session.started).count();
  if (gpu_check.valid()) startup.gpu_init_ms = gpu_check.get().ms;
  startup.no_gpu_reason = gpu_check.valid() ? gpu_check.get().no_gpu_reason : std::string();
  startup.served = session.served;
  startup.server = session.server_description;
  return startup;
}

/// The JSON summary to standard output ("-") or over the file made before the work.
void write_summary_json(const nlohmann::json& summary, const std::string& json_path, Session& session) {
  const std::string text = json_dump(summary, 2) + "\n";
  if (json_path == "-") {
    session.print(text);
  } else if (!session.file_access().write_output(
                 json_path, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), true)) {
    throw Error(ErrorKind::output, json_path + ": cannot write the JSON summary");
  }
}

}  // namespace

ExitCode run_batch_command(const BatchRequest& request, const Filter& filter, const ConvolveOptions& options,
                           const engine::CodecRequest& codec_in, const codec::GpuOutputOptions& gpu_output,
                           Session& session) {
  spdlog::logger& log = session.log();
  engine::Files& files = session.file_access();
  // CUDA's initialisation runs beside the input listing and the first decodes; the filter
  // threads wait for it (BatchOptions::wait_for_gpu), and the no-device error stops the batch
  // before any output is written.
  const bool uses_gpu = !request.no_filter && options.variant != Variant::opencv;
  std::shared_future<GpuCheck> gpu_check;
  if (uses_gpu)
    gpu_check = std::async(std::launch::async, check_gpu, options.variant, std::cref(session), std::ref(log)).share();

  // From here on SIGINT and SIGTERM only set a flag: the batch stops taking images, lets the
  // writes in flight finish (no temporary file is left), reports, and exits 130 or 143. A served
  // command's signals reach its client, which forwards them (Session::interrupt_signal).
  std::optional<InterruptGuard> interrupts;
  if (!session.served) interrupts.emplace();

  // Everything that can be checked without reading an image is checked here, before the output
  // folder or any file is created.
  const PlannedItems planned = plan_items(request, session);
  const std::vector<engine::BatchItem>& items = planned.items;
  const engine::Shard& shard = planned.shard;
  const std::vector<std::string> option_notes = encoder_option_notes(items, request.write);
  for (const engine::BatchItem& item : items)
    if (files.same_file(item.input, item.output))
      throw Error(ErrorKind::usage, item.output + ": output is the input file; refusing to overwrite it");

  engine::BatchOptions batch_options;
  auto gpu_codec_reasons = std::make_shared<GpuCodecReasons>();
  batch_options.run =
      batch_run_settings(request, filter, options, codec_in, gpu_output, items, session, gpu_codec_reasons);
  engine::RunSettings& run = batch_options.run;
  const bool any_gpu_codec = choose_routes(items, batch_options, *gpu_codec_reasons, log);
  batch_options.files = &files;
  batch_options.fail_fast = request.fail_fast;
  batch_options.process_exits_after = !session.served;  // served: the server goes on
  batch_options.jobs = request.jobs > 0 ? request.jobs : std::max(1U, std::thread::hardware_concurrency());
  if (request.gpu_threads > 0) batch_options.filter_threads_per_device = request.gpu_threads;
  batch_options.devices = parse_devices(request.devices, uses_gpu || any_gpu_codec);
  if (session.warm != nullptr && request.devices.empty() && (uses_gpu || any_gpu_codec))
    batch_options.devices = session.warm->devices();  // served: every device the server has
  if (session.warm != nullptr && any_gpu_codec) run.warm_codecs = session.warm->gpu_codecs();  // set up already
  if (uses_gpu) batch_options.wait_for_gpu = [gpu_check] { gpu_check.get(); };

  if (const int signal = session.interrupt_signal(); signal != 0) {
    log.warn("interrupted by {} before any work; nothing written", signal_name(signal));
    return interrupted_exit_code(signal);
  }
  files.make_directories(request.out_dir);
  // Checked only where some output is to be written: a re-run whose outputs all exist skips them.
  const bool writes_some = std::any_of(items.begin(), items.end(), [&](const engine::BatchItem& item) {
    return request.overwrite || files.kind(item.output, false) == engine::FileKind::none;
  });
  if (writes_some) check_output_folder_writable(request.out_dir, files);
  for (const std::string& note : option_notes) log.warn("{}", note);

  // Made before the work, so an unwritable summary path fails before any image is processed.
  const bool json_file = !request.json_path.empty() && request.json_path != "-";
  if (json_file && !files.write_output(request.json_path, {}, true))
    throw Error(ErrorKind::output, request.json_path + ": cannot write the JSON summary");

  ProgressLine progress(!request.quiet && ::isatty(session.err_fd) != 0, items.size(), session.err_fd);
  const engine::ItemObserver report_item = item_reporter(progress, log);
  log.info("{}", where_it_runs(session));
  batch_options.stop_requested = [&session] { return session.interrupt_signal() != 0; };
  const auto pipeline_start = std::chrono::steady_clock::now();
  const BatchSummary summary = [&] {
    try {
      return engine::run_batch(items, batch_options, report_item);
    } catch (...) {
      // The batch did not run (no usable GPU, or a thread could not start): leave no empty summary.
      if (json_file) files.remove(request.json_path);
      throw;
    }
  }();
  progress.finish();
  // A signal that came after the last image still ends the process as interrupted.
  const int signal = session.interrupt_signal();
  const ExitCode exit_code = signal != 0 ? interrupted_exit_code(signal) : summary.exit_code;
  log_outcome(summary, request.fail_fast, signal, log);

  if (!request.json_path.empty())
    write_summary_json(summary_json(summary, exit_code, signal, shard, batch_options,
                                    startup_times(session, pipeline_start, gpu_check)),
                       request.json_path, session);
  return exit_code;
}

}  // namespace cuconv::cli
