// cuconv command line: parses options into one request (command_line.cpp), calls the library,
// reports. src/cli/ is the only place that knows about argv, CLI11, spdlog and exit codes.
#include "cli/batch_command.hpp"
#include "cli/codec_options.hpp"
#include "cli/command_line.hpp"
#include "cli/interrupt.hpp"
#include "cli/library_messages.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>
#include <cuconv/version.hpp>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ansicolor_sink.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgcodecs.hpp>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

using cuconv::ErrorKind;
using cuconv::ExitCode;
using cuconv::cli::Action;
using cuconv::cli::CliRequest;
using cuconv::cli::ParsedCommand;

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

ExitCode list_filters() {
  std::printf("Presets (built in, from filters/*.mat):\n");
  for (const std::string& name : cuconv::preset_names()) {
    std::printf("  %-24s %s\n", name.c_str(), cuconv::preset_summary(name).c_str());
  }
  std::printf("Parametric (docs/filters.md defines the weights):\n");
  for (const cuconv::ParametricFilter& kind : cuconv::parametric_filters())
    std::printf("  %-24s %s\n", std::string(kind.syntax).c_str(), std::string(kind.summary).c_str());
  std::printf("Also: an inline WxH[+X+Y]:v,v,... filter, a libvips .mat file or a plain matrix file.\n");
  return ExitCode::ok;
}

ExitCode print_version() {
  std::printf("cuconv %s\n", CUCONV_VERSION);
  std::printf("commit %s, %s build\n", CUCONV_GIT_COMMIT, *CUCONV_BUILD_TYPE != '\0' ? CUCONV_BUILD_TYPE : "default");
  std::printf("OpenCV %s\n", cv::getVersionString().c_str());
  std::printf("%s\n", cuconv::cuda_versions().c_str());
  std::string reason;
  const std::vector<std::string> gpus = cuconv::describe_gpus(&reason);
  if (gpus.empty()) std::printf("GPU: none: %s; filtering runs on the CPU (OpenCV)\n", reason.c_str());
  for (const std::string& gpu : gpus) std::printf("GPU %s\n", gpu.c_str());
  return ExitCode::ok;
}

// ---- standard input and output (single-image mode) ----------------------------------------------

constexpr std::string_view kStdinName = "standard input";

/// "png" for "png:-" (standard output in that format); empty for a file name.
std::string stdout_format(const std::string& output) {
  return output.size() > 2 && output.ends_with(":-") ? output.substr(0, output.size() - 2) : std::string();
}

/// A file name of the output's format: `output` itself, or a stand-in in the temporary folder for
/// FORMAT:- (never created) that the format, encoder and metadata checks read the extension of.
std::string format_path(const std::string& output) {
  const std::string format = stdout_format(output);
  if (format.empty()) return output;
  return (std::filesystem::temp_directory_path() / ("cuconv-stdout." + format)).string();
}

/// Runs `f`; an Error that names `path` is thrown again naming `shown` instead.
template <class F>
auto naming(const std::string& path, std::string_view shown, F f) {
  try {
    return f();
  } catch (const cuconv::Error& e) {
    std::string message = e.what();
    for (std::size_t at = message.find(path); at != std::string::npos; at = message.find(path, at + shown.size()))
      message.replace(at, path.size(), shown);
    throw cuconv::Error(e.kind(), message);
  }
}

/// Standard input copied to a private temporary file, removed on destruction, so that
/// read_image's checks (the header's size against --max-pixels, truncation) apply to it too.
class StdinCopy {
 public:
  StdinCopy() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cuconv-stdin-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw cuconv::Error(ErrorKind::bad_input, "standard input: cannot make a temporary copy");
    path_ = pattern;
    std::vector<char> buffer(1 << 16);
    std::size_t count = 0;
    bool ok = true;
    while (ok && (count = std::fread(buffer.data(), 1, buffer.size(), stdin)) > 0)
      ok = ::write(fd, buffer.data(), count) == static_cast<ssize_t>(count);
    ok = ::close(fd) == 0 && ok && !std::ferror(stdin);
    if (!ok) {
      std::filesystem::remove(path_);
      throw cuconv::Error(ErrorKind::bad_input, "standard input: cannot read or copy it to " + path_);
    }
  }
  ~StdinCopy() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  StdinCopy(const StdinCopy&) = delete;
  StdinCopy& operator=(const StdinCopy&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The input's pixels and metadata, from a file or from standard input ("-").
struct InputImage {
  cv::Mat image;
  cuconv::ImageMetadata metadata;
};

InputImage read_input(const CliRequest& req) {
  if (req.input != "-") return {cuconv::read_image(req.input, {req.max_pixels}), cuconv::read_metadata(req.input)};
  const StdinCopy copy;
  return naming(copy.path(), kStdinName, [&] {
    return InputImage{cuconv::read_image(copy.path(), {req.max_pixels}), cuconv::read_metadata(copy.path())};
  });
}

/// check_output_format for a file or for FORMAT:- (checked as a file of that extension).
void check_output(const std::string& output, int depth, int channels) {
  const std::string stand_in = format_path(output);
  naming(stand_in, output, [&] { cuconv::check_output_format(stand_in, depth, channels); });
}

/// The image encoded as `format` on standard output, as write_image_atomic would write a file of
/// that format (quality, compression, metadata).
void write_stdout(const std::string& output, const cv::Mat& image, const cuconv::WriteOptions& options) {
  const std::string stand_in = format_path(output);
  const std::vector<unsigned char> bytes =
      naming(stand_in, output, [&] { return cuconv::encode_image(stand_in, image, options); });
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
    throw cuconv::Error(ErrorKind::output, output + ": cannot write to standard output");
}

nlohmann::json comparison_json(const cuconv::ComparisonStats& s, const cuconv::ConvolveResult& gpu,
                               double opencv_ms) {
  const double gpu_total = gpu.times.upload_ms + gpu.times.kernel_ms + gpu.times.download_ms;
  return {{"variant", std::string(cuconv::to_string(gpu.variant_used))},
          {"max_abs_difference", s.max_abs_difference},
          {"differing_values", s.differing_values},
          {"total_values", s.total_values},
          {"differing_percent", s.differing_percent},
          {"relative_error", s.relative_error},
          {"rule", s.float_output ? std::string("relative error <= 1e-5")
                                  : fmt::format("max abs difference <= 1 and <= {:g}% differing",
                                                100.0 * s.max_differing_fraction)},
          {"exact_where_reference_differs", s.exact_where_reference_differs},
          {"within_tolerance", s.within_tolerance},
          {"kernel_ms", gpu.times.kernel_ms},
          {"gpu_total_ms", gpu_total},
          {"opencv_ms", opencv_ms},
          {"speedup_kernel", gpu.times.kernel_ms > 0 ? opencv_ms / gpu.times.kernel_ms : 0.0},
          {"speedup_total", gpu_total > 0 ? opencv_ms / gpu_total : 0.0}};
}

/// Writes `bytes` to the output atomically; SIGINT/SIGTERM wait for the temporary file to be
/// renamed or removed. Returns the exit code.
ExitCode write_output(const CliRequest& req, std::span<const unsigned char> bytes, const cv::Mat* image,
                      const cuconv::WriteOptions& options) {
  const auto t = std::chrono::steady_clock::now();
  {
    const cuconv::cli::InterruptGuard interrupts;
    if (image != nullptr) cuconv::write_image_atomic(req.output, *image, options);
    else cuconv::write_encoded_atomic(req.output, bytes, req.overwrite);
  }
  spdlog::info("wrote {} in {:.2f} ms", req.output, elapsed_ms(t));
  if (const int signal = cuconv::cli::received_signal(); signal != 0) {
    spdlog::warn("interrupted by {} while writing {}; the file was finished", cuconv::cli::signal_name(signal),
                 req.output);
    return cuconv::cli::interrupted_exit_code(signal);
  }
  return ExitCode::ok;
}

/// JPEG -> JPEG on the GPU (docs/gpu-jpeg.md): nvJPEG decode, filter on the device, nvJPEG encode.
ExitCode run_gpu_jpeg(const CliRequest& req, const cuconv::ConvolveOptions& options, const cuconv::Filter& filter,
                      const cuconv::WriteOptions& write_options) {
  cuconv::check_output_format(req.output, CV_8U, 3);
  // The job starts nvJPEG's set-up on its own thread at once, while this one reads the file.
  auto t = std::chrono::steady_clock::now();
  cuconv::codec::JpegFilterJob job(options.device, &filter, options, cuconv::cli::jpeg_output_options(req));
  const std::vector<std::uint8_t> bytes = cuconv::codec::read_jpeg_file(req.input, req.max_pixels);
  const double read_ms = elapsed_ms(t);
  t = std::chrono::steady_clock::now();
  std::vector<cuconv::codec::JpegJobResult> results = job.run({std::span<const std::uint8_t>(bytes)});
  const double gpu_ms = elapsed_ms(t);
  const cuconv::codec::JpegJobResult& r = results.front();
  if (r.error) throw cuconv::Error(r.error->kind(), req.input + ": " + r.error->what());
  if (!r.decoder_fallback.empty()) spdlog::info("{}: {}; decoded with OpenCV", req.input, r.decoder_fallback);
  if (!r.gpu_fallback.empty()) spdlog::warn("{}; filtered with OpenCV on the CPU instead", r.gpu_fallback);
  spdlog::info("read {} ({} bytes) in {:.2f} ms; then GPU codec set-up, decode, filter and encode {:.2f} ms",
               req.input, bytes.size(), read_ms, gpu_ms);
  spdlog::info("{}x{}, {} channel(s): decoder {} {:.3f} ms, variant {} {:.3f} ms, encoder {} {:.3f} ms", r.width,
               r.height, r.channels, r.decoder, r.decode_ms,
               r.variant_used ? std::string(cuconv::to_string(*r.variant_used)) : std::string("none"), r.filter_ms,
               r.encoder, r.encode_ms);
  return write_output(req, r.encoded, nullptr, write_options);
}

/// The main job: read, filter, (compare), write. Returns the exit code.
ExitCode run(const CliRequest& req, const cuconv::ConvolveOptions& options) {
  const cuconv::Filter filter = cuconv::load_filter(req.filter_spec);
  const std::string to_stdout = stdout_format(req.output);
  if (req.output == "-")
    throw cuconv::Error(ErrorKind::usage, "OUTPUT '-': name the format of standard output, e.g. png:- or tif:-");
  if (!to_stdout.empty() && (req.compare || req.bench_runs > 0))
    throw cuconv::Error(ErrorKind::usage, "--compare and --bench print to standard output; write the image to a file");
  if (to_stdout.empty()) {
    if (req.input != "-") cuconv::check_not_same_file(req.input, req.output);
    // An existing output file is never replaced without --overwrite, as in batch mode (a folder
    // or a device at that name gets check_output_format's own message).
    std::error_code ec;
    const auto output_status = std::filesystem::symlink_status(req.output, ec);
    if (!req.overwrite && (std::filesystem::is_regular_file(output_status) || std::filesystem::is_symlink(output_status)))
      throw cuconv::Error(ErrorKind::output, req.output + ": exists; left unchanged (use --overwrite to replace it)");
  }

  cuconv::WriteOptions write_options = cuconv::cli::write_options_of(req);
  const std::string output_format = format_path(req.output);
  naming(output_format, req.output, [&] { cuconv::check_encoder_options(output_format, write_options); });
  const cuconv::codec::CodecRequest codec = cuconv::cli::codec_request(req, options);
  // The GPU codec reads and writes files; standard input and output go through OpenCV.
  const bool files = req.input != "-" && to_stdout.empty();
  if (!files && codec.codec == cuconv::codec::Codec::gpu)
    throw cuconv::Error(ErrorKind::usage, "--codec gpu reads and writes JPEG files, not standard input or output");
  if (files && cuconv::codec::choose_gpu_codec(codec, req.input, req.output, cuconv::codec::gpu_codec_unusable_reason))
    return run_gpu_jpeg(req, options, filter, write_options);

  auto t = std::chrono::steady_clock::now();
  InputImage input = read_input(req);
  cv::Mat& image = input.image;
  const double read_ms = elapsed_ms(t);
  const int out_depth = cuconv::resolve_output_depth(image.depth(), options.depth);
  check_output(req.output, out_depth, image.channels());
  spdlog::info("read {} ({}x{}, {} channel(s), {}) in {:.2f} ms", req.input, image.cols, image.rows,
               image.channels(), cuconv::depth_name(image.depth()), read_ms);
  cuconv::ImageMetadata& metadata = input.metadata;
  if (req.auto_orient) cuconv::auto_orient(image, metadata);
  // A sideways photo whose Orientation tag is lost stays sideways in every viewer: say so.
  if (const int orientation = cuconv::exif_orientation(metadata);
      orientation != 1 && (req.strip_metadata || cuconv::metadata_kept_by(output_format).find("EXIF") == std::string::npos))
    spdlog::warn("{}: the input's EXIF Orientation {} is not kept ({}), so the output is not shown upright; "
                 "--auto-orient rotates the pixels", req.output, orientation,
                 req.strip_metadata ? "--strip" : "the format holds no EXIF");
  if (req.strip_metadata) metadata = {};
  if (!metadata.empty()) {
    const std::string kept = cuconv::metadata_kept_by(output_format);
    spdlog::info("{}: metadata kept: {}", req.output, kept.empty() ? "none (the format holds none)" : kept);
  }
  write_options.metadata = &metadata;

  std::string no_gpu_reason;
  if (options.variant == cuconv::Variant::automatic && !cuconv::cuda_device_available(&no_gpu_reason))
    spdlog::warn("no usable CUDA device ({}); filtering with OpenCV on the CPU", no_gpu_reason);
  if (req.compare && options.variant == cuconv::Variant::opencv)
    throw cuconv::Error(ErrorKind::usage, "--compare compares a GPU variant with OpenCV; choose a GPU --variant");

  cuconv::ConvolveResult result = cuconv::convolve(image, filter, options);
  // Test hook: corrupt the result so the --compare failure path (exit 6, no output) can be driven
  // end to end; a correct kernel never leaves the tolerance on its own.
  if (const char* corrupt = std::getenv("CUCONV_TEST_CORRUPT_RESULT"); corrupt != nullptr && *corrupt == '1')
    cv::add(result.image, cv::Scalar::all(3), result.image);
  if (!result.fallback_reason.empty()) {
    spdlog::warn("{}; filtered with OpenCV on the CPU instead", result.fallback_reason);
    no_gpu_reason = result.fallback_reason;  // why --bench and --compare have no GPU result below
  }
  spdlog::info("variant {}: upload {:.3f} ms, kernel {:.3f} ms, download {:.3f} ms, {} strip(s)",
               cuconv::to_string(result.variant_used), result.times.upload_ms, result.times.kernel_ms,
               result.times.download_ms, result.strips);

  if (req.bench_runs > 0) {
    const cuconv::StageTimes& t = result.times;
    if (result.variant_used == cuconv::Variant::opencv)
      throw cuconv::Error(ErrorKind::gpu, "--bench times GPU kernels, but this run used OpenCV on the CPU" +
                                              (no_gpu_reason.empty() ? std::string() : " (" + no_gpu_reason + ")"));
    std::printf("bench: variant %s, %dx%d, %d channel(s): kernel median %.3f ms over %d runs, %.1f GB/s, "
                "%.0f%% of a device-to-device copy of the same bytes (%.3f ms)\n",
                std::string(cuconv::to_string(result.variant_used)).c_str(), image.cols, image.rows, image.channels(),
                t.kernel_median_ms, t.bench_runs, t.bytes_moved / t.kernel_median_ms * 1e-6,
                100.0 * t.copy_roof_ms / t.kernel_median_ms, t.copy_roof_ms);
  }

  ExitCode code = ExitCode::ok;
  if (req.compare) {
    if (result.variant_used == cuconv::Variant::opencv)
      throw cuconv::Error(ErrorKind::gpu, "--compare needs a GPU result: " + no_gpu_reason);
    cuconv::ConvolveOptions reference_options = options;
    reference_options.variant = cuconv::Variant::opencv;
    reference_options.opencv_method = cuconv::OpenCvMethod::reference;  // no DFT rounding noise
    const cuconv::ConvolveResult reference = cuconv::convolve(image, filter, reference_options);
    // 16-bit results: a value equal to the exact sum (filter2D in double) is correct where
    // filter2D's float sum rounds the other way.
    cv::Mat exact;
    if (cuconv::compares_with_exact_sum(result.image.depth())) {
      reference_options.opencv_method = cuconv::OpenCvMethod::exact_sum;
      exact = cuconv::convolve(image, filter, reference_options).image;
    }
    const cuconv::ComparisonStats stats =
        cuconv::compare_to_reference(result.image, reference.image, image, filter, options.delta,
                                     options.border == cuconv::Border::constant ? options.border_value : 0.0,
                                     cuconv::max_differing_fraction_for(result.variant_used),
                                     exact.empty() ? nullptr : &exact);
    const nlohmann::json report = comparison_json(stats, result, reference.times.kernel_ms);
    if (req.json) {
      std::cout << report.dump(2) << '\n';
    } else {
      std::printf("variant %s vs cv::filter2D: max abs difference %g, %zu of %zu values differ (%.4f%%), "
                  "relative error %.3g -> %s\n",
                  std::string(cuconv::to_string(result.variant_used)).c_str(), stats.max_abs_difference,
                  stats.differing_values, stats.total_values, stats.differing_percent, stats.relative_error,
                  stats.within_tolerance ? "within tolerance" : "OUTSIDE tolerance");
      if (stats.exact_where_reference_differs > 0)
        std::printf("  (%zu more values differ from cv::filter2D's float sum and equal the exact sum: not counted)\n",
                    stats.exact_where_reference_differs);
      std::printf("time: gpu kernel %.3f ms (%.3f ms with transfers), opencv %.3f ms, speedup %.1fx kernel / %.1fx total\n",
                  result.times.kernel_ms, report["gpu_total_ms"].get<double>(), reference.times.kernel_ms,
                  report["speedup_kernel"].get<double>(), report["speedup_total"].get<double>());
    }
    if (!stats.within_tolerance) {
      spdlog::error("{}: result differs from cv::filter2D beyond the tolerance; output not written", req.output);
      return ExitCode::compare_mismatch;
    }
  }

  t = std::chrono::steady_clock::now();
  if (!to_stdout.empty()) {
    write_stdout(req.output, result.image, write_options);
    spdlog::info("wrote {} ({}) to standard output in {:.2f} ms", to_stdout, req.output, elapsed_ms(t));
    return code;
  }
  if (const ExitCode written = write_output(req, {}, &result.image, write_options); written != ExitCode::ok)
    return written;
  return code;
}

/// The "cuconv: level: message" logger on stderr, at warnings until the options say otherwise.
/// It writes to the terminal's own descriptor, which stays put while LibraryMessages captures 2.
void setup_logging() {
  auto sink = std::make_shared<spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>>(
      cuconv::cli::terminal_stderr(), spdlog::color_mode::automatic);
  auto logger = std::make_shared<spdlog::logger>("cuconv", std::move(sink));
  logger->set_pattern("cuconv: %^%l%$: %v");
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

ExitCode dispatch(const ParsedCommand& command, std::chrono::steady_clock::time_point process_start) {
  const CliRequest& req = command.request;
  spdlog::set_level(req.quiet ? spdlog::level::err : req.verbose ? spdlog::level::info : spdlog::level::warn);
  switch (command.action) {
    case Action::list_filters: return list_filters();
    case Action::version: return print_version();
    case Action::show_filter:
      std::cout << cuconv::describe_filter(cuconv::load_filter(req.show_filter));
      return ExitCode::ok;
    case Action::filter_batch: {
      const cuconv::cli::LibraryMessages library_messages(req.verbose);
      const cuconv::cli::BatchRequest& batch = command.batch;
      const cuconv::Filter filter = batch.no_filter ? cuconv::Filter{} : cuconv::load_filter(req.filter_spec);
      return cuconv::cli::run_batch_command(batch, filter, command.options, process_start,
                                            cuconv::cli::codec_request(req, command.options),
                                            cuconv::cli::jpeg_output_options(req));
    }
    case Action::filter_image: {
      const cuconv::cli::LibraryMessages library_messages(req.verbose);
      return run(req, command.options);
    }
    case Action::exit_now: break;
  }
  return static_cast<ExitCode>(command.exit_code);
}

}  // namespace

int main(int argc, char** argv) {
  const auto process_start = std::chrono::steady_clock::now();
  setup_logging();
  try {
    const ParsedCommand command = cuconv::cli::parse_command_line(argc, argv);
    if (command.action == Action::exit_now) {  // --help, or why the command line does not parse
      std::cout << command.stdout_text << std::flush;
      std::cerr << command.stderr_text << std::flush;
      return command.exit_code;
    }
    return static_cast<int>(dispatch(command, process_start));
  } catch (const cuconv::Error& e) {
    spdlog::error("{}", e.what());
    return static_cast<int>(cuconv::exit_code_for(e.kind()));
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return static_cast<int>(ExitCode::internal);
  }
}
