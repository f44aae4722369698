// SPDX-License-Identifier: Apache-2.0
// The per-image operation (image_operation.hpp): each stage once, for every mode.
#include "engine/image_operation.hpp"

#include "codec/image_header.hpp"
#include "common/library_loads.hpp"
#include "common/thread_stderr.hpp"
#include "engine/cpu_or_gpu.hpp"
#include "engine/gpu_codec_pipeline.hpp"
#include "engine/gpu_filter_job.hpp"
#include "engine/warm_gpu.hpp"

#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace cuconv::engine {

namespace {

using Clock = std::chrono::steady_clock;

/// A stage's milliseconds since `since`, less the libraries this thread loaded meanwhile.
double ms_since(Clock::time_point since) { return common::ms_without_loads(since); }

const std::string& shown_input(const ImageTask& task) {
  return task.input_shown.empty() ? task.input : task.input_shown;
}
const std::string& shown_output(const ImageTask& task) {
  return task.output_shown.empty() ? task.output : task.output_shown;
}

/// Runs `f`; an Error naming one of the paths in `names` (local path -> shown name) is thrown
/// again naming what the user gave.
template <class F>
auto naming_all(std::initializer_list<std::pair<const std::string&, const std::string&>> names, F f) {
  try {
    return f();
  } catch (const Error& e) {
    std::string message = e.what();
    for (const auto& [path, shown] : names) message = renamed(std::move(message), path, shown);
    throw Error(e.kind(), message);
  }
}

void note(ImageReport& report, ImageNote::Level level, std::string text) {
  report.notes.push_back({level, std::move(text)});
}

/// `text` as one shell word: as it is when it holds only safe characters, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("/._-+,:@%").find(c) != std::string_view::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Throws Error{output} when the output's folder is not there, asked of the command's `files`
/// (the caller's, relative to its working folder, when served).
void check_output_folder(const ImageTask& task, Files& files) {
  const std::string folder = std::filesystem::path(task.output).parent_path().string();  // the name alone
  if (!folder.empty() && files.kind(folder, true) != FileKind::directory)
    throw Error(ErrorKind::output, shown_output(task) + ": folder " + folder +
                                       " does not exist (create it first: mkdir -p " + shell_word(folder) + ")");
}

}  // namespace

std::string_view to_string(ImageStatus status) noexcept {
  switch (status) {
    case ImageStatus::pending:
      return "pending";
    case ImageStatus::ok:
      return "ok";
    case ImageStatus::failed:
      return "failed";
    case ImageStatus::skipped:
      return "skipped";
  }
  return "?";
}

std::string renamed(std::string message, const std::string& path, const std::string& shown) {
  if (path == shown || path.empty()) return message;
  for (std::size_t at = message.find(path); at != std::string::npos; at = message.find(path, at + shown.size()))
    message.replace(at, path.size(), shown);
  return message;
}

bool gpu_usable(std::string* reason) {
  static std::once_flag once;
  static bool usable = false;
  static std::string why;
  std::call_once(once, [] { usable = cuda_device_available(&why); });
  if (reason != nullptr) *reason = why;
  return usable;
}

Route choose_route(const ImageTask& task, const RunSettings& settings) {
  using Unusable = std::function<std::string(const codec::GpuCodecFormat&)>;
  const Unusable unusable =
      settings.gpu_codec_unusable ? settings.gpu_codec_unusable : Unusable(engine::gpu_codec_unusable_reason);
  return Route{engine::choose_gpu_codec(settings.codec, task.input, task.output, unusable)};
}

LoadedImage load_image(const ImageTask& task, const RunSettings& settings, Route route, Files& files,
                       ImageReport& report) {
  const std::string& output = task.output;
  // What is at the output's name and its extension need no pixels: checked before reading. A
  // stand-in name (FORMAT:- on standard output) is no file.
  const bool output_is_file = task.output_shown.empty() || task.output_shown == output;
  const FileKind existing = output_is_file ? files.kind(output, true) : FileKind::none;
  if (existing == FileKind::directory)
    throw Error(ErrorKind::output, shown_output(task) + ": is a directory; give the output a file name");
  // The final rename would replace a device, FIFO or socket rather than write to it.
  if (existing != FileKind::none && existing != FileKind::regular)
    throw Error(ErrorKind::output, shown_output(task) + ": exists and is not a regular file; refusing to replace it");
  naming(output, shown_output(task), [&] { check_output_extension(output); });
  const auto start = Clock::now();
  LoadedImage loaded;
  loaded.route = route;
  // What is at a path the user named is asked before it is opened, as read_image asks (a FIFO, a
  // socket or a device is never opened); served, the client answers. An input with a stand-in
  // name (the copy of standard input) is a file the command made.
  if (task.input_shown.empty()) {
    const FileStatus input_status = files.status(task.input);
    codec::check_input_file(task.input, input_status.error,
                            input_status.kind == FileKind::regular     ? codec::InputKind::regular
                            : input_status.kind == FileKind::directory ? codec::InputKind::directory
                                                                       : codec::InputKind::other);
  }
  const OpenedFile input = files.open_input(task.input);
  const std::string& path = input.local_path();
  // What the libraries print about the file names it as the user did (not /proc/self/fd/N).
  const common::ThreadShownPath shown_path(path, shown_input(task));
  const auto names = {std::pair<const std::string&, const std::string&>{path, shown_input(task)},
                      std::pair<const std::string&, const std::string&>{output, shown_output(task)}};
  if (route.on_gpu_codec()) {
    naming_all(names, [&] {
      check_output_format(output, CV_8U, 3);
      if (output_is_file) check_output_folder(task, files);
      codec::GpuCodecFile file = route.gpu_codec->read(path, settings.read_limits.max_pixels);
      loaded.bytes = std::move(file.bytes);  // a moved vector keeps its buffer: the walk stays valid
      loaded.walk = std::move(file.walk);
    });
    report.input_bytes = loaded.bytes.size();
    report.times.read_ms = ms_since(start);
    return loaded;
  }
  naming_all(names, [&] {
    loaded.image = read_image(path, settings.read_limits, report.decoder);
    loaded.metadata = read_metadata(path);
  });
  for (const std::string& warning : loaded.metadata.warnings)
    note(report, ImageNote::Level::warning, shown_input(task) + ": " + warning);
  const cv::Mat& image = loaded.image;
  report.width = image.cols;
  report.height = image.rows;
  report.channels = image.channels();
  report.input_depth = image.depth();
  if (settings.auto_orient) auto_orient(loaded.image, loaded.metadata);
  const MetadataFate fate = metadata_kept_by(output, loaded.metadata);
  // A sideways photo whose Orientation tag is lost stays sideways in every viewer: say so.
  if (const int orientation = exif_orientation(loaded.metadata);
      orientation != 1 && (settings.strip_metadata || fate.kept.find("EXIF") == std::string::npos))
    note(report, ImageNote::Level::warning,
         shown_output(task) + ": the input's EXIF Orientation " + std::to_string(orientation) + " is not kept (" +
             (settings.strip_metadata ? "`strip_metadata`" : "the format holds no EXIF") +
             "), so the output is not shown upright; `auto_orient` rotates the pixels");
  if (settings.strip_metadata) loaded.metadata = {};
  if (!loaded.metadata.empty()) {
    const std::string ext = std::filesystem::path(output).extension().string();
    note(report, ImageNote::Level::info,
         shown_output(task) + ": metadata kept: " + (fate.kept.empty() ? "none" : fate.kept) +
             (fate.dropped.empty() ? "" : "; dropped (" + ext + " cannot hold it): " + fate.dropped));
    // Colours shift without the profile in colour-managed viewers: worth a warning, once a command.
    if (fate.dropped.find("ICC") != std::string::npos && !settings.icc_drop_warned->exchange(true))
      note(report, ImageNote::Level::warning,
           shown_output(task) + ": the input's ICC colour profile is dropped (" + ext +
               " cannot hold one here), so colour-managed viewers may show other colours; .png, .jpg and .tif "
               "keep it (said once per command)");
  }
  const int depth =
      settings.apply_filter ? resolve_output_depth(image.depth(), settings.convolve.depth) : image.depth();
  naming_all(names, [&] { check_output_format(output, depth, image.channels()); });
  if (output_is_file) check_output_folder(task, files);
  report.times.read_ms = ms_since(start);
  return loaded;
}

ConvolveResult filter_image(LoadedImage& loaded, const RunSettings& settings, GpuWorkspace* workspace,
                            ImageReport& report) {
  if (!settings.apply_filter) return {};
  ConvolveOptions options = settings.convolve;
  if (settings.cpu_when_faster && options.variant == Variant::automatic) {
    const cv::Mat& image = loaded.image;
    const CpuOrGpu p = predict_cpu_or_gpu(settings.filter, image.cols, image.rows, image.channels(),
                                          static_cast<int>(image.elemSize1()));
    report.auto_reason = p.reason();
    report.cpu_predicted_faster = p.cpu_faster();
    if (p.cpu_faster()) {
      options.variant = Variant::opencv;                // CUDA is never touched then
      options.opencv_method = OpenCvMethod::same_bits;  // auto's CPU path: separable where exact
    }
  }
  ConvolveResult result;
  const auto start = Clock::now();
  try {
    result = workspace != nullptr ? convolve(loaded.image, settings.filter, options, *workspace)
                                  : convolve(loaded.image, settings.filter, options);
  } catch (const Error& e) {
    // Out of host memory is the input's problem (too large for this process): name it.
    if (e.kind() != ErrorKind::bad_input) throw;
    throw Error(e.kind(), report.input + ": " + e.what());
  }
  loaded.image = result.image;  // shares the pixels with the result
  report.times.filter_stage_ms = ms_since(start);
  report.times.filter_ms = result.times.kernel_ms;
  report.times.upload_ms = result.times.upload_ms;
  report.times.download_ms = result.times.download_ms;
  report.variant_used = result.variant_used;
  report.strips = result.strips;
  report.gpu_fallback = result.fallback_reason;
  return result;
}

std::vector<std::uint8_t> encode_image(LoadedImage& loaded, const ImageTask& task, const RunSettings& settings,
                                       ImageReport& report) {
  if (loaded.route.on_gpu_codec()) return std::move(loaded.bytes);
  const auto start = Clock::now();
  // The output's format's share of --quality and --compression: a batch may mix JPEG and PNG.
  WriteOptions write = encoder_options_for(task.output, settings.write);
  write.overwrite = settings.overwrite;
  write.metadata = &loaded.metadata;
  report.encoder = encoder_of(task.output, loaded.image, write);
  std::vector<std::uint8_t> encoded =
      naming(task.output, shown_output(task), [&] { return cuconv::encode_image(task.output, loaded.image, write); });
  loaded.image.release();
  report.times.encode_ms = ms_since(start);
  report.times.write_ms += report.times.encode_ms;
  return encoded;
}

bool write_image(const ImageTask& task, std::span<const std::uint8_t> encoded, const RunSettings& settings,
                 Files& files, ImageReport& report) {
  const auto start = Clock::now();
  const bool written = files.write_output(task.output, encoded, settings.overwrite);
  report.times.write_ms += ms_since(start);
  return written;
}

namespace {

/// The GPU codec route for one image: decode, filter and encode on the device, through a server's
/// warm pipeline or a pipeline of its own, whose set-up runs while the file is read.
std::vector<std::uint8_t> run_gpu_codec(const ImageTask& task, const RunSettings& settings, Route route, Files& files,
                                        ImageReport& report) {
  const codec::GpuCodecFormat& format = *route.gpu_codec;
  const engine::GpuJobSettings job{settings.apply_filter ? &settings.filter : nullptr, settings.convolve,
                                   settings.gpu_output};
  const bool warm = settings.warm_codecs != nullptr && settings.warm_codecs->serves(format, settings.convolve.device);
  std::optional<engine::GpuFilterJob> own;
  if (!warm) own.emplace(format, settings.convolve.device, job.filter, job.options, job.output);
  LoadedImage loaded = load_image(task, settings, route, files, report);
  const std::span<const std::uint8_t> file(loaded.bytes);
  engine::GpuJobResult r =
      own ? own->run(file, std::move(loaded.walk))
          : settings.warm_codecs->run(format, settings.convolve.device, file, job, std::move(loaded.walk));
  if (r.error) throw Error(r.error->kind(), shown_input(task) + ": " + r.error->what());
  report_gpu_result(r, report);
  return std::move(r.encoded);
}

}  // namespace

void report_gpu_result(const GpuJobResult& result, ImageReport& report) {
  if (!result.decoder.empty()) report.decoder = result.decoder;
  if (!result.encoder.empty()) report.encoder = result.encoder;
  report.decoder_fallback = result.decoder_fallback;
  report.variant_used = result.variant_used;
  report.gpu_fallback = result.gpu_fallback;
  for (const std::string& warning : result.warnings)
    note(report, ImageNote::Level::warning, report.input + ": " + warning);
  if (result.width > 0) {  // a file that failed before its decode leaves what the reader found
    report.width = result.width;
    report.height = result.height;
    report.channels = result.channels;
  }
  report.times.read_ms += result.decode_ms;  // read and decode, as on OpenCV's path
  report.times.filter_ms = result.filter_ms;
  report.times.filter_stage_ms = result.filter_ms;
  report.times.encode_ms = result.encode_ms;
  report.times.write_ms = result.encode_ms;  // encode; the writer adds the write
  report.times.codec_setup_ms = result.setup_wait_ms;
  report.times.codec_shutdown_ms = result.shutdown_ms;
}

ImageResult process_image(const ImageTask& task, const RunSettings& settings, Route route, Files& files,
                          const InspectResult& inspect) {
  const auto start = Clock::now();
  ImageResult result;
  ImageReport& report = result.report;
  report.input = shown_input(task);
  report.output = shown_output(task);
  std::vector<std::uint8_t> encoded;
  if (route.on_gpu_codec()) {
    encoded = run_gpu_codec(task, settings, route, files, report);
  } else {
    LoadedImage loaded = load_image(task, settings, route, files, report);
    const cv::Mat input = loaded.image;  // shares the pixels; filtering makes a new image
    const ConvolveResult filtered = filter_image(loaded, settings, settings.workspace, report);
    if (inspect && !inspect(input, filtered, report)) {
      report.status = ImageStatus::skipped;
      return result;
    }
    encoded = encode_image(loaded, task, settings, report);
  }
  if (task.keep_encoded) {
    result.encoded = std::move(encoded);
  } else {
    result.written = write_image(task, encoded, settings, files, report);
  }
  report.status = ImageStatus::ok;
  report.times.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

}  // namespace cuconv::engine
