// cuconv command line: parses options into one request, calls the library, reports. The only
// place (with batch_command.cpp, its batch mode) that knows about argv, CLI11, spdlog and exit codes.
#include "cli/batch_command.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>
#include <cuconv/version.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <opencv2/core.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

namespace {

using cuconv::ErrorKind;
using cuconv::ExitCode;

/// Everything the user asked for, as parsed from argv.
struct CliRequest {
  std::string input;
  std::string output;
  std::string filter_spec;
  std::string variant = "auto";
  std::string border = "reflect101";
  std::string depth = "same";
  std::string alpha = "filter";
  std::string anchor;
  double border_value = 0;
  double delta = 0;
  std::uint64_t max_pixels = cuconv::kDefaultMaxPixels;
  bool verbose = false;
  bool quiet = false;
  bool list_filters = false;
  std::string show_filter;
  bool compare = false;
  bool json = false;
  int bench_runs = 0;
};

template <class Enum>
std::map<std::string, Enum> names_of(std::initializer_list<Enum> values) {
  std::map<std::string, Enum> m;
  for (Enum v : values) m.emplace(std::string(cuconv::to_string(v)), v);
  return m;
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

/// "X,Y" -> anchor; Error{usage} otherwise.
std::pair<int, int> parse_anchor(const std::string& text) {
  int x = -1, y = -1;
  char comma = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &x, &comma, &y, &extra) != 3 || comma != ',' || x < 0 || y < 0)
    throw cuconv::Error(ErrorKind::usage, "--anchor '" + text + "': expected X,Y with non-negative integers");
  return {x, y};
}

int list_filters() {
  for (const std::string& name : cuconv::preset_names()) {
    const cuconv::Filter f = cuconv::load_filter(name);
    std::printf("%-12s %dx%d\n", name.c_str(), f.width, f.height);
  }
  std::printf("box:N        N x N mean\ngaussian:R,S (2R+1)^2 Gaussian, sigma S\n");
  return 0;
}

cuconv::ConvolveOptions to_options(const CliRequest& req) {
  cuconv::ConvolveOptions o;
  o.variant = *cuconv::parse_variant(req.variant);  // CLI11 checked membership
  o.border = *cuconv::parse_border(req.border);
  o.depth = *cuconv::parse_depth(req.depth);
  o.border_value = req.border_value;
  o.delta = req.delta;
  o.keep_alpha = req.alpha == "keep";
  if (!req.anchor.empty()) std::tie(o.anchor_x, o.anchor_y) = parse_anchor(req.anchor);
  o.bench_runs = req.bench_runs;
  return o;
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
          {"rule", s.float_output ? "relative error <= 1e-5" : "max abs difference <= 1 and <= 0.1% differing"},
          {"within_tolerance", s.within_tolerance},
          {"kernel_ms", gpu.times.kernel_ms},
          {"gpu_total_ms", gpu_total},
          {"opencv_ms", opencv_ms},
          {"speedup_kernel", gpu.times.kernel_ms > 0 ? opencv_ms / gpu.times.kernel_ms : 0.0},
          {"speedup_total", gpu_total > 0 ? opencv_ms / gpu_total : 0.0}};
}

/// The main job: read, filter, (compare), write. Returns the exit code.
ExitCode run(const CliRequest& req) {
  const cuconv::ConvolveOptions options = to_options(req);
  const cuconv::Filter filter = cuconv::load_filter(req.filter_spec);
  cuconv::check_not_same_file(req.input, req.output);

  auto t = std::chrono::steady_clock::now();
  const cv::Mat image = cuconv::read_image(req.input, {req.max_pixels});
  const double read_ms = elapsed_ms(t);
  const int out_depth = cuconv::resolve_output_depth(image.depth(), options.depth);
  cuconv::check_output_format(req.output, out_depth, image.channels());
  spdlog::info("read {} ({}x{}, {} channel(s), {}) in {:.2f} ms", req.input, image.cols, image.rows,
               image.channels(), cuconv::depth_name(image.depth()), read_ms);

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
  spdlog::info("variant {}: upload {:.3f} ms, kernel {:.3f} ms, download {:.3f} ms",
               cuconv::to_string(result.variant_used), result.times.upload_ms, result.times.kernel_ms,
               result.times.download_ms);

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
      throw cuconv::Error(ErrorKind::gpu, "--compare needs a CUDA device: " + no_gpu_reason);
    cuconv::ConvolveOptions reference_options = options;
    reference_options.variant = cuconv::Variant::opencv;
    reference_options.opencv_method = cuconv::OpenCvMethod::reference;  // no DFT rounding noise
    const cuconv::ConvolveResult reference = cuconv::convolve(image, filter, reference_options);
    const cuconv::ComparisonStats stats =
        cuconv::compare_to_reference(result.image, reference.image, image, filter, options.delta,
                                     options.border == cuconv::Border::constant ? options.border_value : 0.0,
                                     result.variant_used == cuconv::Variant::fft ? cuconv::kFftMaxDifferingFraction
                                                                                 : cuconv::kMaxDifferingFraction);
    const nlohmann::json report = comparison_json(stats, result, reference.times.kernel_ms);
    if (req.json) {
      std::cout << report.dump(2) << '\n';
    } else {
      std::printf("variant %s vs cv::filter2D: max abs difference %g, %zu of %zu values differ (%.4f%%), "
                  "relative error %.3g -> %s\n",
                  std::string(cuconv::to_string(result.variant_used)).c_str(), stats.max_abs_difference,
                  stats.differing_values, stats.total_values, stats.differing_percent, stats.relative_error,
                  stats.within_tolerance ? "within tolerance" : "OUTSIDE tolerance");
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
  cuconv::write_image_atomic(req.output, result.image);
  spdlog::info("wrote {} in {:.2f} ms", req.output, elapsed_ms(t));
  return code;
}

void setup_logging(const CliRequest& req) {
  auto logger = spdlog::stderr_color_mt("cuconv");
  logger->set_pattern("cuconv: %^%l%$: %v");
  logger->set_level(req.quiet ? spdlog::level::err : req.verbose ? spdlog::level::info : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  CliRequest req;
  cuconv::cli::BatchRequest batch;
  const bool batch_mode = cuconv::cli::is_batch_invocation(argc, argv);
  CLI::App app{"cuconv: filter images on an NVIDIA GPU with the semantics of cv::filter2D"};
  app.set_version_flag("--version", std::string("cuconv ") + CUCONV_VERSION);
  if (batch_mode) {
    app.add_option("INPUT", batch.inputs, "input images and directories (their images)");
  } else {
    app.add_option("INPUT", req.input, "input image (read unchanged: depth and alpha kept)");
    app.add_option("OUTPUT", req.output, "output image; the extension picks the format");
  }
  app.add_option("-f,--filter", req.filter_spec,
                 "preset name, box:N, gaussian:R,SIGMA, inline WxH[+X+Y]:v,v,..., or a filter file");
  app.add_option("--variant", req.variant, "kernel variant")
      ->check(CLI::IsMember(names_of({cuconv::Variant::automatic, cuconv::Variant::opencv, cuconv::Variant::basic,
                                      cuconv::Variant::constmem, cuconv::Variant::tiled,
                                      cuconv::Variant::tiled_halo, cuconv::Variant::cached, cuconv::Variant::fast,
                                      cuconv::Variant::fft})))
      ->capture_default_str();
  app.add_option("--border", req.border, "border mode")
      ->check(CLI::IsMember(names_of({cuconv::Border::reflect101, cuconv::Border::reflect,
                                      cuconv::Border::replicate, cuconv::Border::constant, cuconv::Border::wrap})))
      ->capture_default_str();
  auto* border_value = app.add_option("--border-value", req.border_value, "pixel value outside the image for --border constant");
  app.add_option("--anchor", req.anchor, "X,Y: filter cell placed over the output pixel (default: the filter's)");
  app.add_option("--delta", req.delta, "value added to every result before rounding")->capture_default_str();
  app.add_option("--depth", req.depth, "output depth")
      ->check(CLI::IsMember(names_of({cuconv::Depth::same, cuconv::Depth::u8, cuconv::Depth::u16,
                                      cuconv::Depth::s16, cuconv::Depth::f32})))
      ->capture_default_str();
  app.add_option("--alpha", req.alpha, "4-channel images: filter the alpha channel or keep it")
      ->check(CLI::IsMember({"filter", "keep"}))
      ->capture_default_str();
  app.add_option("--max-pixels", req.max_pixels, "refuse larger images (PNG/JPEG/TIFF/BMP: from the header, before decoding)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {  // by hand: CLI11's conversion wraps "-5" and 2^64 around
            std::uint64_t value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec == std::errc{} && end == text.data() + text.size() && value > 0) return "";
            return "expected a whole number from 1 to 2^64-1, got '" + text + "'";
          },
          "PIXELS"))
      ->capture_default_str();
  auto* verbose = app.add_flag("-v,--verbose", req.verbose, "print each stage's time");
  app.add_flag("-q,--quiet", req.quiet, "print errors only")->excludes(verbose);
  app.add_flag("--list-filters", req.list_filters, "list the built-in filters and exit");
  app.add_option("--show-filter", req.show_filter, "print a filter (preset, file or string) and exit");
  app.add_flag("--compare", req.compare, "also run cv::filter2D and report the difference and speed-up");
  if (batch_mode)
    app.add_option("--json", batch.json_path, "write the batch summary as JSON to FILE, or - for stdout");
  else
    app.add_flag("--json", req.json,
                 "with --compare: print the report as one JSON object (batch mode: --json FILE|- "
                 "writes the summary)");
  app.add_option("--bench", req.bench_runs,
                 "also time the GPU kernel N more times: median ms, GB/s and % of a device-to-device copy")
      ->check(CLI::Range(1, 100000));
  const std::vector<CLI::Option*> batch_only = cuconv::cli::add_batch_options(app, batch);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(ExitCode::usage);
  }

  setup_logging(req);
  try {
    if (req.list_filters) return list_filters();
    if (!req.show_filter.empty()) {
      std::cout << cuconv::describe_filter(cuconv::load_filter(req.show_filter));
      return 0;
    }
    if (!batch_mode && (req.input.empty() || req.output.empty()))
      throw cuconv::Error(ErrorKind::usage, "INPUT and OUTPUT are required (see --help)");
    if (req.filter_spec.empty() && !(batch_mode && batch.no_filter))
      throw cuconv::Error(ErrorKind::usage, "--filter is required (see --list-filters)");
    if (border_value->count() > 0 && req.border != "constant")
      throw cuconv::Error(ErrorKind::usage, "--border-value only applies to --border constant");
    if (batch_mode) {
      if (req.compare)
        throw cuconv::Error(ErrorKind::usage, "--compare works on one image (cuconv INPUT OUTPUT), not with --out-dir");
      batch.quiet = req.quiet;
      const cuconv::Filter filter = batch.no_filter ? cuconv::Filter{} : cuconv::load_filter(req.filter_spec);
      return static_cast<int>(cuconv::cli::run_batch_command(batch, filter, to_options(req)));
    }
    for (const CLI::Option* option : batch_only)
      if (option->count() > 0)
        throw cuconv::Error(ErrorKind::usage, option->get_name() + " applies to batch mode: add --out-dir DIR");
    if (req.json && !req.compare)
      throw cuconv::Error(ErrorKind::usage, "--json reports a comparison; use it with --compare");
    return static_cast<int>(run(req));
  } catch (const cuconv::Error& e) {
    spdlog::error("{}", e.what());
    return static_cast<int>(cuconv::exit_code_for(e.kind()));
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return static_cast<int>(ExitCode::internal);
  }
}
