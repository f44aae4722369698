// Library entry point: validate the request, resolve it into a ConvolveJob, pick the variant and
// run it (src/reference.cpp for OpenCV, src/gpu/ for the GPU variants).
#include "gpu/launch/cufft_api.hpp"
#include "gpu/device_select.hpp"
#include "gpu/launch/fft_ties.hpp"
#include "gpu/launch/launch.hpp"
#include "filter/job.hpp"
#include "common/names.hpp"
#include "filter/splits.hpp"

#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <opencv2/core.hpp>

#include <chrono>
#include <cmath>
#include <new>
#include <string>
#include <utility>

namespace cuconv {

namespace {

/// Filters of at least this many taps that `fast` cannot unroll go to `fft` (docs/design.md,
/// "How auto chooses").
constexpr int kFftMinTaps = 256;
/// Smallest radius auto sends to `tensor` (docs/kernel-notes.md, 'tensor'); below it `fast`.
constexpr int kTensorMinRadius = 3;
/// Fewest taps of a dense 8-bit filter auto sends to `tensor`'s dense kernel: more than 5x5's on one
/// channel, where `fast` was level or faster; 5x5 on three and four, where `tensor` was faster
/// (docs/benchmarks.md, "Issue 26's shapes in one run").
constexpr int kTensorDenseMinTaps = 26;
constexpr int kTensorDenseMinTapsColour = 25;
/// One-channel images from which 5x5 takes the warpgroup kernel where it runs: from this size up
/// it was level with `fast` or faster at every size measured but one (docs/kernel-notes.md,
/// 'From which size').
constexpr long long kTensorWgmmaMinPixels = 4096LL * 4096LL;
/// 16-bit dense filters from this many taps (15x15) take `tensor` where `fast` has a kernel; below
/// it `fast` was faster (docs/kernel-notes.md, 'Dense 16-bit filters on tensor cores').
constexpr int kTensorDenseU16MinTaps = 225;

bool is_gpu_variant(Variant v) { return v != Variant::automatic && v != Variant::opencv; }

/// The border value as cv::copyMakeBorder stores it in the input type.
double saturate_to_depth(double value, int depth) {
  switch (depth) {
    case CV_8U: return cv::saturate_cast<uchar>(value);
    case CV_16U: return cv::saturate_cast<ushort>(value);
    default: return static_cast<float>(value);
  }
}

detail::ConvolveJob make_job(int input_depth, const Filter& filter, const ConvolveOptions& o) {
  detail::ConvolveJob job;
  job.kernel = cv::Mat(filter.height, filter.width, CV_64F);
  for (int r = 0; r < filter.height; ++r)
    for (int c = 0; c < filter.width; ++c) job.kernel.at<double>(r, c) = filter.at(r, c);
  job.weights.reserve(filter.weights.size());
  for (double w : filter.weights) job.weights.push_back(static_cast<float>(w));
  job.output_depth = resolve_output_depth(input_depth, o.depth);
  job.anchor_x = o.anchor_x >= 0 ? o.anchor_x : filter.resolved_anchor_x();
  job.anchor_y = o.anchor_y >= 0 ? o.anchor_y : filter.resolved_anchor_y();
  if (job.anchor_x >= filter.width || job.anchor_y >= filter.height) {
    throw Error(ErrorKind::usage, "anchor (" + std::to_string(job.anchor_x) + "," +
                                      std::to_string(job.anchor_y) + ") is outside the " +
                                      std::to_string(filter.width) + "x" +
                                      std::to_string(filter.height) + " filter " + filter.origin);
  }
  job.delta = o.delta + filter.offset;
  if (!std::isfinite(job.delta) || !std::isfinite(o.border_value))
    throw Error(ErrorKind::usage, "--delta and --border-value must be finite numbers");
  detail::FilterSplits splits =
      detail::filter_splits(filter.weights, filter.width, filter.height, input_depth, job.output_depth, job.delta);
  job.separable = std::move(splits.separable);
  job.dense_tensor = std::move(splits.dense_tensor);
  job.border = o.border;
  job.border_value = saturate_to_depth(o.border_value, input_depth);
  if (o.device < -1) throw Error(ErrorKind::usage, "device index must be -1 (current) or >= 0");
  job.keep_alpha = o.keep_alpha;
  job.poison_output = o.poison_output;
  job.bench_runs = o.bench_runs;
  if (o.max_strip_rows < 0) throw Error(ErrorKind::usage, "max_strip_rows must be >= 0 (0: no forced limit)");
  job.gpu_memory_limit = o.gpu_memory_limit;
  job.max_strip_rows = o.max_strip_rows;
  return job;
}

/// What every entry point accepts: a non-empty image of 8U, 16U or 32F with 1, 3 or 4 channels.
void validate_input(bool empty, int depth, int channels) {
  if (empty) throw Error(ErrorKind::bad_input, "the image is empty (0 pixels)");
  if (depth != CV_8U && depth != CV_16U && depth != CV_32F)
    throw Error(ErrorKind::bad_input, "unsupported pixel depth " + depth_name(depth) +
                                          " (supported: 8U, 16U, 32F)");
  if (channels != 1 && channels != 3 && channels != 4)
    throw Error(ErrorKind::bad_input, "unsupported channel count " + std::to_string(channels) +
                                          " (supported: 1, 3, 4)");
}

/// choose_variant with the filter's rank-1 test and dense split already made (`separable`: what
/// separable_for found for these depths; `dense`: dense_tensor_for) and the image's pixels (0:
/// not known).
Variant choose_for(const Filter& filter, const ConvolveOptions& options,
                   const std::optional<detail::SeparableFactors>& separable,
                   const std::optional<detail::DenseTensorSplit>& dense, bool gpu_present, int input_depth,
                   int output_depth, int channels, long long pixels);

}  // namespace

const std::vector<Variant>& gpu_variants() noexcept {
  static const std::vector<Variant> variants = [] {
    std::vector<Variant> gpu;
    for (const auto& entry : names::kVariants)
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
  // The pairs cv::filter2D accepts (checked against OpenCV 4.6 in tests/test_convolve.cpp).
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
                       int output_depth, int channels, long long pixels) {
  const detail::FilterSplits splits = detail::filter_splits(filter.weights, filter.width, filter.height, input_depth,
                                                            output_depth, options.delta + filter.offset);
  return choose_for(filter, options, splits.separable, splits.dense_tensor, gpu_present, input_depth, output_depth,
                    channels, pixels);
}

namespace {

/// The one place that decides what `--variant auto` runs (docs/design.md, "How auto chooses").
Variant choose_for(const Filter& filter, const ConvolveOptions& options,
                   const std::optional<detail::SeparableFactors>& separable,
                   const std::optional<detail::DenseTensorSplit>& dense, bool gpu_present, int input_depth,
                   int output_depth, int channels, long long pixels) {
  // No usable GPU: OpenCV on the CPU is the only path (the CLI warns about it).
  if (!gpu_present) return Variant::opencv;
  const int anchor_x = options.anchor_x >= 0 ? options.anchor_x : filter.resolved_anchor_x();
  const bool centred_square = filter.width == filter.height && filter.width % 2 == 1 &&
                              anchor_x == filter.width / 2;
  const int radius = filter.width / 2;
  // `fast` has unrolled kernels for centred squares up to 15x15, and for separable ones up to
  // 31x31 (kw + kh multiply-adds per output), with the same pixel type in and out; it beats every
  // PMPP variant there. Mixed depths would get its slow generic kernel.
  const bool fast_compiled = centred_square && input_depth == output_depth;
  const bool rank_one = separable.has_value() && (separable->fast || separable->wide);
  // 8-bit separable filters whose exact integer row sums keep the pass rule: `tensor` sums the rows
  // on tensor cores, and from radius 4 the columns too where that bound holds (the only separable
  // path for radii 9-15); an alpha channel kept as it is leaves them to `fast`.
  if (fast_compiled && separable && input_depth == CV_8U && !options.keep_alpha && radius >= kTensorMinRadius &&
      detail::tensor_separable_supported(radius, separable->tensor, separable->tensor_mma))
    return Variant::tensor;
  if (fast_compiled && radius >= 1 && radius <= 15 && rank_one) return Variant::fast;
  // Other 8-bit filters up to 31x31 whose integer split keeps the pass rule: `tensor` sums them
  // densely on tensor cores from kTensorDenseMinTaps taps, 5x5 and up on colour images (past 17x17
  // on the planes kernel, still several times faster than `fft`).
  // On one channel the warpgroup kernel (compute capability 9.0) also takes 5x5 on images of
  // kTensorWgmmaMinPixels and more.
  const int taps = filter.width * filter.height;
  if (dense && dense->holds && input_depth == CV_8U && !options.keep_alpha &&
      (taps >= (channels > 1 ? kTensorDenseMinTapsColour : kTensorDenseMinTaps) ||
       (channels == 1 && taps >= kTensorDenseMinTapsColour && pixels >= kTensorWgmmaMinPixels &&
        cuda_device_count() > 0 && detail::device_runs_wgmma())))
    return Variant::tensor;
  // 16-bit filters up to 31x31 whose split keeps the integer rule: `tensor` sums their weights'
  // digits exactly on tensor cores from kTensorDenseU16MinTaps taps on one channel, on colour
  // images only past `fast`'s unrolled 15x15 (RGB 15x15: `fast` 1-5% faster in five runs, RGBA
  // 10%), and wherever `fast` has no unrolled kernel (`tiled-halo` would run them, several times
  // slower).
  const bool fast_unrolled = fast_compiled && radius <= 7;
  if (dense && dense->holds && input_depth == CV_16U && !options.keep_alpha &&
      ((filter.width * filter.height >= kTensorDenseU16MinTaps && channels == 1) || !fast_unrolled))
    return Variant::tensor;
  if (fast_compiled && radius >= 1 && radius <= 7) return Variant::fast;
  // Float filters of kFftMinTaps or more up to 31x31 whose split keeps the rule: `tensor` sums them
  // in block floating point on tensor cores, 1.2-3x faster than `fft` (docs/kernel-notes.md,
  // 'Dense float filters on tensor cores'); below that `fast` was faster.
  if (dense && dense->holds && input_depth == CV_32F && !options.keep_alpha &&
      filter.width * filter.height >= kFftMinTaps)
    return Variant::tensor;
  // Large dense filters: overlap-save FFT, whose cost hardly grows with the filter. Integer
  // outputs only where `fft` sums the results near a rounding tie again (8-bit outputs of usual
  // filters), so ties round as in filter2D's direct sums; 16-bit outputs stay on direct sums
  // (src/gpu/fft_ties.hpp).
  const bool fft_rounds_ties =
      output_depth == CV_32F || detail::fft_tie_margin(detail::pixel_type_for_depth(input_depth),
                                                       detail::pixel_type_for_depth(output_depth),
                                                       filter.weights.data(), filter.weights.size()) > 0.0;
  if (fft_rounds_ties && filter.width * filter.height >= kFftMinTaps && detail::cufft_api() != nullptr)
    return Variant::fft;
  // Other shapes: tiled-halo's shared tile reads fewer global values per output than the generic
  // fast kernel; it grows with the filter, and cached needs no more shared memory.
  if (detail::shared_bytes_tiled_halo(filter.width, filter.height) > 48 * 1024) return Variant::cached;
  return Variant::tiled_halo;
}

/// The Error for an OpenCV filter that ran out of host memory: the image is too large for this
/// process (bad input, exit 3), not a bug. The caller adds the file's name.
Error out_of_host_memory(const cv::Mat& src) {
  return Error(ErrorKind::bad_input, "not enough memory to filter a " + std::to_string(src.cols) + "x" +
                                         std::to_string(src.rows) + " image of " + std::to_string(src.channels()) +
                                         " channel(s) on the CPU (free memory or raise the address-space limit, "
                                         "ulimit -v)");
}

/// convolve() with the caller's kept workspace, or none (the GPU path then makes its own).
ConvolveResult convolve_with(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                             GpuWorkspace::State* kept_workspace) {
  validate_input(src.empty(), src.depth(), src.channels());
  const detail::ConvolveJob job = make_job(src.depth(), filter, options);

  std::string no_gpu_reason;
  std::string fallback_reason;
  const bool needs_gpu_check = options.variant == Variant::automatic || is_gpu_variant(options.variant);
  const bool gpu_present = needs_gpu_check && cuda_device_available(&no_gpu_reason);
  const Variant variant = options.variant == Variant::automatic
                              ? choose_for(filter, options, job.separable, job.dense_tensor, gpu_present,
                                           src.depth(), job.output_depth, src.channels(),
                                           static_cast<long long>(src.cols) * src.rows)
                              : options.variant;
  if (is_gpu_variant(variant)) {
    if (!gpu_present)
      throw Error(ErrorKind::gpu, "variant '" + std::string(to_string(variant)) +
                                      "' needs a CUDA device: " + no_gpu_reason +
                                      " (use --variant opencv or auto)");
    try {
      if (options.device >= 0) detail::select_device(options.device);
      return detail::convolve_gpu(src, job, variant, kept_workspace);
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
    result.image = detail::convolve_opencv(src, job, options.opencv_method);
  } catch (const std::bad_alloc&) {
    throw out_of_host_memory(src);
  } catch (const cv::Exception& e) {
    if (e.code != cv::Error::StsNoMem) throw;
    throw out_of_host_memory(src);
  }
  result.times.kernel_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.variant_used = Variant::opencv;
  return result;
}

}  // namespace

ConvolveResult convolve(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options) {
  return convolve_with(src, filter, options, nullptr);
}

ConvolveResult convolve(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                        GpuWorkspace& workspace) {
  return convolve_with(src, filter, options, &workspace.state());
}

Variant convolve(ConstDeviceImageView src, DeviceImageView dst, const Filter& filter, const ConvolveOptions& options,
                 GpuWorkspace& workspace, StreamHandle stream) {
  validate_input(src.data == nullptr || src.width <= 0 || src.height <= 0, src.depth, src.channels);
  const detail::ConvolveJob job = make_job(src.depth, filter, options);
  if (dst.data == nullptr || dst.width != src.width || dst.height != src.height || dst.channels != src.channels ||
      dst.depth != job.output_depth)
    throw Error(ErrorKind::usage, "convolve: the output device image must have the input's width, height and "
                                  "channels and the output depth (" + depth_name(job.output_depth) + ")");
  if (options.variant == Variant::opencv)
    throw Error(ErrorKind::usage, "convolve: device images need a GPU variant (not opencv)");
  if (options.bench_runs > 0) throw Error(ErrorKind::usage, "convolve: --bench needs a host image");
  if (options.device >= 0) detail::select_device(options.device);
  const Variant variant = options.variant == Variant::automatic
                              ? choose_for(filter, options, job.separable, job.dense_tensor, true, src.depth,
                                           job.output_depth, src.channels,
                                           static_cast<long long>(src.width) * src.height)
                              : options.variant;
  detail::convolve_device(src, dst, job, variant, workspace.state(), stream);
  return variant;
}

}  // namespace cuconv
