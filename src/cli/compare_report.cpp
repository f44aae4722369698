// SPDX-License-Identifier: Apache-2.0
// --bench and --compare reports of single-image mode (compare_report.hpp).
#include "cli/compare_report.hpp"

#include "cli/json_text.hpp"

#include <cuconv/compare.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cuconv::cli {

namespace {

nlohmann::json comparison_json(const ComparisonStats& s, const ConvolveResult& gpu, double opencv_ms) {
  const double gpu_total = gpu.times.upload_ms + gpu.times.kernel_ms + gpu.times.download_ms;
  return {{"variant", std::string(to_string(gpu.variant_used))},
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

void print_bench(const cv::Mat& input, const ConvolveResult& result, const std::string& no_gpu_reason,
                 Session& session) {
  const StageTimes& t = result.times;
  if (result.variant_used == Variant::opencv)
    throw Error(ErrorKind::gpu, "--bench times GPU kernels, but this run used OpenCV on the CPU" +
                                    (no_gpu_reason.empty() ? std::string() : " (" + no_gpu_reason + ")"));
  session.print(fmt::format(
      "bench: variant {}, {}x{}, {} channel(s): kernel median {:.3f} ms over {} runs, "
      "{:.1f} GB/s, {:.0f}% of a device-to-device copy of the same bytes ({:.3f} ms)\n",
      to_string(result.variant_used), input.cols, input.rows, input.channels(), t.kernel_median_ms, t.bench_runs,
      t.bytes_moved / t.kernel_median_ms * 1e-6, 100.0 * t.copy_roof_ms / t.kernel_median_ms, t.copy_roof_ms));
}

}  // namespace

ExitCode report_bench_and_compare(const CliRequest& req, const cv::Mat& input, const ConvolveResult& result_in,
                                  const Filter& filter, const ConvolveOptions& options,
                                  const std::string& no_gpu_reason, const Codecs& codecs, Session& session) {
  if (req.bench_runs > 0) print_bench(input, result_in, no_gpu_reason, session);
  if (!req.compare) return ExitCode::ok;
  if (result_in.variant_used == Variant::opencv)
    throw Error(ErrorKind::gpu, "--compare needs a GPU result: " + no_gpu_reason);
  ConvolveResult planted;
  if (session.before_compare) {
    planted = result_in;
    planted.image = result_in.image.clone();
    session.before_compare(planted);
  }
  const ConvolveResult& result = session.before_compare ? planted : result_in;
  const ReferenceCheck check = check_against_reference(input, filter, options, result.image, result.variant_used);
  const ComparisonStats& stats = check.stats;
  nlohmann::json report = comparison_json(stats, result, check.reference_kernel_ms);
  report["decoder"] = codecs.decoder;
  report["encoder"] = codecs.encoder;
  report["served"] = session.served;
  report["server"] = session.served ? nlohmann::json(session.server_description) : nlohmann::json();
  if (req.json) {
    session.print(json_dump(report, 2) + "\n");
  } else {
    std::string text = fmt::format(
        "variant {} vs cv::filter2D: max abs difference {:g}, {} of {} values differ ({:.4f}%), relative error {:.3g} "
        "-> {}\n",
        to_string(result.variant_used), stats.max_abs_difference, stats.differing_values, stats.total_values,
        stats.differing_percent, stats.relative_error,
        stats.within_tolerance ? "within tolerance" : "OUTSIDE tolerance");
    if (stats.exact_where_reference_differs > 0)
      text +=
          fmt::format("  ({} more values differ from cv::filter2D's float sum and equal the exact sum: not counted)\n",
                      stats.exact_where_reference_differs);
    text += fmt::format(
        "time: gpu kernel {:.3f} ms ({:.3f} ms with transfers), opencv {:.3f} ms, speedup {:.1f}x "
        "kernel / {:.1f}x total\n",
        result.times.kernel_ms, report["gpu_total_ms"].get<double>(), check.reference_kernel_ms,
        report["speedup_kernel"].get<double>(), report["speedup_total"].get<double>());
    session.print(text);
  }
  return stats.within_tolerance ? ExitCode::ok : ExitCode::compare_mismatch;
}

}  // namespace cuconv::cli
