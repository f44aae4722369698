// SPDX-License-Identifier: Apache-2.0
// Library entry point: validate the request, resolve it into a ConvolveJob, pick the variant
// (choose_variant.cpp) and run it (cpu_reference.cpp for OpenCV, cpu_separable.cpp for `auto`'s
// separable CPU path, src/gpu/ for the GPU variants).
#include "common/names.hpp"
#include "convolve/choose_variant.hpp"
#include "convolve/cpu_reference.hpp"
#include "convolve/cpu_separable.hpp"
#include "filter/splits.hpp"
#include "gpu/device_select.hpp"
#include "gpu/gpu_convolve.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu/memory/workspace.hpp"  // workspace_state

#include <cuconv/error.hpp>

#include <opencv2/core.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <utility>

namespace cuconv {

namespace {

bool is_gpu_variant(Variant v) { return v != Variant::automatic && v != Variant::opencv; }

gpu::ConvolveJob make_job(int input_depth, const Filter& filter, const ConvolveOptions& o) {
  gpu::ConvolveJob job;
  job.kernel = cv::Mat(filter.height, filter.width, CV_64F);
  for (int r = 0; r < filter.height; ++r)
    for (int c = 0; c < filter.width; ++c) job.kernel.at<double>(r, c) = filter.at(r, c);
  job.weights.reserve(filter.weights.size());
  for (double w : filter.weights) job.weights.push_back(static_cast<float>(w));
  job.output_depth = resolve_output_depth(input_depth, o.depth);
  job.anchor_x = o.anchor_x >= 0 ? o.anchor_x : filter.resolved_anchor_x();
  job.anchor_y = o.anchor_y >= 0 ? o.anchor_y : filter.resolved_anchor_y();
  if (job.anchor_x >= filter.width || job.anchor_y >= filter.height) {
    throw Error(ErrorKind::usage, "anchor (" + std::to_string(job.anchor_x) + "," + std::to_string(job.anchor_y) +
                                      ") is outside the " + std::to_string(filter.width) + "x" +
                                      std::to_string(filter.height) + " filter " + filter.origin);
  }
  job.delta = o.delta + filter.offset;
  if (!std::isfinite(job.delta) || !std::isfinite(o.border_value))
    throw Error(ErrorKind::usage, "`delta` and `border_value` must be finite numbers");
  filter::FilterSplits splits =
      filter::filter_splits(filter.weights, filter.width, filter.height, input_depth, job.output_depth, job.delta);
  job.separable = std::move(splits.separable);
  job.dense_tensor = std::move(splits.dense_tensor);
  job.border = o.border;
  job.border_value = convolution::stored_border_value(o.border_value, input_depth);
  if (o.device < -1) throw Error(ErrorKind::usage, "device index must be -1 (current) or >= 0");
  job.keep_alpha = o.keep_alpha;
  job.bench_runs = o.bench_runs;
  job.gpu_memory_limit = o.gpu_memory_limit;
  job.parallel_host_copies = o.parallel_host_copies;
  return job;
}

/// Whether two doubles have the same bits (NaN equal to itself, 0 not equal to -0).
bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

/// make_job's answer, from this thread's last few requests when it is one of them (the weights,
/// sizes, anchors and offset of the filter, the options make_job reads, the input depth): a loop
/// that filters with one filter (a Python caller, a batch thread) builds its job once, not once an
/// image. The reference is good until this thread's next call.
const gpu::ConvolveJob& kept_job(int input_depth, const Filter& filter, const ConvolveOptions& o) {
  struct Entry {
    Filter filter;
    ConvolveOptions options;
    int input_depth;
    gpu::ConvolveJob job;
  };
  constexpr std::size_t kKept = 4;
  thread_local std::vector<Entry> recent;  // least recently used first
  const auto found = std::find_if(recent.begin(), recent.end(), [&](const Entry& e) {
    const Filter& f = e.filter;
    const ConvolveOptions& p = e.options;
    return e.input_depth == input_depth && f.width == filter.width && f.height == filter.height &&
           f.anchor_x == filter.anchor_x && f.anchor_y == filter.anchor_y && same_bits(f.offset, filter.offset) &&
           std::equal(f.weights.begin(), f.weights.end(), filter.weights.begin(), filter.weights.end(), same_bits) &&
           p.anchor_x == o.anchor_x && p.anchor_y == o.anchor_y && same_bits(p.delta, o.delta) && p.depth == o.depth &&
           p.border == o.border && same_bits(p.border_value, o.border_value) && p.keep_alpha == o.keep_alpha &&
           p.bench_runs == o.bench_runs && p.gpu_memory_limit == o.gpu_memory_limit && p.device == o.device &&
           p.parallel_host_copies == o.parallel_host_copies;
  });
  if (found != recent.end()) {
    std::rotate(found, found + 1, recent.end());  // now the most recently used
    return recent.back().job;
  }
  gpu::ConvolveJob job = make_job(input_depth, filter, o);  // throws for a refused request: nothing kept
  if (recent.size() == kKept) recent.erase(recent.begin());
  recent.push_back({filter, o, input_depth, std::move(job)});
  return recent.back().job;
}

/// What every entry point accepts: a non-empty image of 8U, 16U or 32F with 1, 3 or 4 channels.
void validate_input(bool empty, int depth, int channels) {
  if (empty) throw Error(ErrorKind::bad_input, "the image is empty (0 pixels)");
  if (depth != CV_8U && depth != CV_16U && depth != CV_32F)
    throw Error(ErrorKind::bad_input, "unsupported pixel depth " + depth_name(depth) + " (supported: 8U, 16U, 32F)");
  if (channels != 1 && channels != 3 && channels != 4)
    throw Error(ErrorKind::bad_input,
                "unsupported channel count " + std::to_string(channels) + " (supported: 1, 3, 4)");
}

}  // namespace

const std::vector<Variant>& gpu_variants() noexcept {
  static const std::vector<Variant> variants = [] {
    std::vector<Variant> gpu;
    for (const auto& entry : common::kVariants)
      if (entry.gpu) gpu.push_back(entry.value);
    return gpu;
  }();
  return variants;
}

int resolve_output_depth(int input_depth, Depth requested) {
  if (requested == Depth::same) return input_depth;
  const int wanted = requested == Depth::u8    ? CV_8U
                     : requested == Depth::u16 ? CV_16U
                     : requested == Depth::s16 ? CV_16S
                                               : CV_32F;
  // The pairs cv::filter2D accepts (checked against OpenCV 4.6 in tests/cpu/test_opencv_variant.cpp).
  const bool allowed = wanted == input_depth ||
                       (input_depth == CV_8U && (wanted == CV_16U || wanted == CV_16S || wanted == CV_32F)) ||
                       (input_depth == CV_16U && wanted == CV_32F);
  if (!allowed) {
    throw Error(ErrorKind::usage, "output depth " + depth_name(wanted) + " is not available for " +
                                      depth_name(input_depth) +
                                      " input (cv::filter2D allows: 8U -> 8u/16u/16s/32f, "
                                      "16U -> 16u/32f, 32F -> 32f)");
  }
  return wanted;
}

Variant choose_variant(const Filter& filter, const ConvolveOptions& options, bool gpu_present, int input_depth,
                       int output_depth, int channels, int width, int height) {
  const filter::FilterSplits splits = filter::filter_splits(filter.weights, filter.width, filter.height, input_depth,
                                                            output_depth, options.delta + filter.offset);
  return convolution::choose_auto(
      {filter, options, splits.separable, splits.dense_tensor, input_depth, output_depth, channels, width, height},
      convolution::current_auto_device(gpu_present));
}

namespace {

/// The Error for an OpenCV filter that ran out of host memory: the image is too large for this
/// process (bad input, exit 3), not a bug. The caller adds the file's name.
Error out_of_host_memory(const cv::Mat& src) {
  return Error(ErrorKind::bad_input, "not enough memory to filter a " + std::to_string(src.cols) + "x" +
                                         std::to_string(src.rows) + " image of " + std::to_string(src.channels()) +
                                         " channel(s) on the CPU (free memory or raise the address-space limit, "
                                         "ulimit -v)");
}

/// convolve() with the caller's kept workspace, or none (the GPU path then makes its own);
/// `into`, when not empty, the caller's image of the result's size and type to write into.
ConvolveResult convolve_with(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                             gpu::WorkspaceState* kept_workspace, const cv::Mat& into = cv::Mat()) {
  validate_input(src.empty(), src.depth(), src.channels());
  const gpu::ConvolveJob& job = kept_job(src.depth(), filter, options);

  std::string no_gpu_reason;
  std::string fallback_reason;
  const bool needs_gpu_check = options.variant == Variant::automatic || is_gpu_variant(options.variant);
  const bool gpu_present = needs_gpu_check && cuda_device_available(&no_gpu_reason);
  const Variant variant = options.variant == Variant::automatic
                              ? convolution::choose_auto({filter, options, job.separable, job.dense_tensor, src.depth(),
                                                          job.output_depth, src.channels(), src.cols, src.rows},
                                                         convolution::current_auto_device(gpu_present))
                              : options.variant;
  if (is_gpu_variant(variant)) {
    if (!gpu_present)
      throw Error(ErrorKind::gpu, "variant '" + std::string(to_string(variant)) +
                                      "' needs a CUDA device: " + no_gpu_reason + " (use `variant` opencv or auto)");
    try {
      if (options.device >= 0) gpu::select_device(options.device);
      return gpu::convolve_gpu(src, job, variant, kept_workspace, into);
    } catch (const Error& e) {
      // `auto` promises a result: a GPU failure (out of memory, a failed launch, a lost device)
      // costs speed, not the image. An explicit variant reports it instead (exit 5).
      if (options.variant != Variant::automatic || e.kind() != ErrorKind::gpu) throw;
      fallback_reason = "variant " + std::string(to_string(variant)) + " failed on the GPU: " + e.what();
    }
  }

  ConvolveResult result;
  result.fallback_reason = std::move(fallback_reason);
  const auto start = std::chrono::steady_clock::now();
  try {
    // `auto` on the CPU (or a caller that asks for same_bits, as the engine does when it picks
    // the CPU for auto): the separable path where it gives filter2D's bits (cpu_separable.hpp).
    // An explicit `opencv` variant runs filter2D itself.
    const bool same_bits = options.opencv_method == OpenCvMethod::same_bits ||
                           (options.variant == Variant::automatic && options.opencv_method == OpenCvMethod::as_called);
    const std::optional<convolution::CpuSeparablePlan> separable =
        same_bits ? convolution::cpu_separable_plan(job, src.depth()) : std::nullopt;
    result.image = separable   ? convolution::convolve_cpu_separable(src, job, *separable, into)
                   : same_bits ? convolution::convolve_opencv(src, job, OpenCvMethod::as_called, into)
                               : convolution::convolve_opencv(src, job, options.opencv_method, into);
  } catch (const std::bad_alloc&) {
    throw out_of_host_memory(src);
  } catch (const cv::Exception& e) {
    if (e.code != cv::Error::StsNoMem) throw;
    throw out_of_host_memory(src);
  }
  result.times.kernel_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.variant_used = Variant::opencv;
  return result;
}

}  // namespace

ConvolveResult convolve(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options) {
  return convolve_with(src, filter, options, nullptr);
}

ConvolveResult convolve(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                        GpuWorkspace& workspace) {
  return convolve_with(src, filter, options, &gpu::workspace_state(workspace));
}

namespace {

/// Whether two images' bytes (first row's start to last row's end) overlap.
bool overlaps(const cv::Mat& a, const cv::Mat& b) {
  const auto end = [](const cv::Mat& m) { return m.ptr(m.rows - 1) + m.cols * m.elemSize(); };
  return a.data < end(b) && b.data < end(a);
}

}  // namespace

ConvolveResult convolve_into(const cv::Mat& src, const cv::Mat& dst, const Filter& filter,
                             const ConvolveOptions& options, GpuWorkspace& workspace) {
  validate_input(src.empty(), src.depth(), src.channels());
  const int output_depth = resolve_output_depth(src.depth(), options.depth);
  if (dst.dims != 2 || dst.rows != src.rows || dst.cols != src.cols || dst.channels() != src.channels() ||
      dst.depth() != output_depth)
    throw Error(ErrorKind::usage, "convolve_into: the output image must be " + std::to_string(src.cols) + "x" +
                                      std::to_string(src.rows) + " with " + std::to_string(src.channels()) +
                                      " channel(s) of depth " + depth_name(output_depth) + ", not " +
                                      std::to_string(dst.cols) + "x" + std::to_string(dst.rows) + " with " +
                                      std::to_string(dst.channels()) + " of " + depth_name(dst.depth()));
  // In place: later strips (and OpenCV's row buffers) would read rows already written.
  const cv::Mat input = overlaps(src, dst) ? src.clone() : src;
  ConvolveResult result = convolve_with(input, filter, options, &gpu::workspace_state(workspace), dst);
  if (result.image.data != dst.data)
    throw Error(ErrorKind::internal, "convolve_into: the result was not written into the caller's image");
  return result;
}

Variant convolve(ConstDeviceImageView src, DeviceImageView dst, const Filter& filter, const ConvolveOptions& options,
                 GpuWorkspace& workspace, StreamHandle stream) {
  validate_input(src.data == nullptr || src.width <= 0 || src.height <= 0, src.depth, src.channels);
  const gpu::ConvolveJob& job = kept_job(src.depth, filter, options);
  if (dst.data == nullptr || dst.width != src.width || dst.height != src.height || dst.channels != src.channels ||
      dst.depth != job.output_depth)
    throw Error(ErrorKind::usage,
                "convolve: the output device image must have the input's width, height and "
                "channels and the output depth (" +
                    depth_name(job.output_depth) + ")");
  if (options.variant == Variant::opencv)
    throw Error(ErrorKind::usage, "convolve: device images need a GPU variant (not opencv)");
  if (options.bench_runs > 0) throw Error(ErrorKind::usage, "convolve: `bench_runs` needs a host image");
  if (options.device >= 0) gpu::select_device(options.device);
  const Variant variant = options.variant == Variant::automatic
                              ? convolution::choose_auto({filter, options, job.separable, job.dense_tensor, src.depth,
                                                          job.output_depth, src.channels, src.width, src.height},
                                                         convolution::current_auto_device(true))
                              : options.variant;
  gpu::convolve_device(src, dst, job, variant, gpu::workspace_state(workspace), stream);
  return variant;
}

}  // namespace cuconv
