// The GPU path: split the image into one pitched device plane per channel (or keep it interleaved
// for `fast` and `fft`), run the variant, bring the planes back and merge them. An image that does
// not fit the device memory limit goes through in horizontal strips, each with its vertical halo.
// Stage times come from CUDA events. Buffers come from a GpuWorkspace's state: the caller's, kept
// between calls (copies staged through pinned memory), or one made for this call.
#include "gpu/device_memory.hpp"
#include "gpu/fault_injection.hpp"
#include "gpu/launch.hpp"
#include "gpu/strips.hpp"
#include "gpu/workspace.hpp"
#include "job.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

namespace cuconv {

bool cuda_device_available(std::string* reason) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (reason != nullptr) *reason = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (reason != nullptr) *reason = "no CUDA device found";
    return false;
  }
  return true;
}

namespace detail {

PixelType pixel_type_for_depth(int depth) {
  switch (depth) {
    case CV_8U: return PixelType::u8;
    case CV_16U: return PixelType::u16;
    case CV_16S: return PixelType::s16;
    case CV_32F: return PixelType::f32;
    default: throw Error(ErrorKind::internal, "no device pixel type for this depth");
  }
}

namespace {

kernels::ConvParams conv_params(const ConvolveJob& job) {
  return {job.kw(),
          job.kh(),
          job.anchor_x,
          job.anchor_y,
          static_cast<float>(job.delta),
          static_cast<kernels::BorderRule>(static_cast<int>(job.border)),
          static_cast<float>(job.border_value)};
}

/// Garbage a kernel must overwrite: NaN for float planes, 0xA5 bytes for integer ones.
void poison_plane(const PlaneView& plane, int depth, cudaStream_t stream) {
  const int byte = depth == CV_32F ? 0xFF : 0xA5;
  CUCONV_CUDA_TRY(cudaMemset2DAsync(plane.data, plane.pitch, byte, plane.row_bytes, plane.rows, stream));
}

void copy_bench_times(const StageTimes& bench, StageTimes& into) {
  into.bench_runs = bench.bench_runs;
  into.kernel_median_ms = bench.kernel_median_ms;
  into.copy_roof_ms = bench.copy_roof_ms;
  into.bytes_moved = bench.bytes_moved;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// --bench: times `launch_all` `runs` times, and `copy_all`, a device-to-device copy of the bytes
/// the kernels read into the buffers they write (the memory roof), each the median of CUDA-event
/// timings.
void run_benchmark(int runs, const std::function<void()>& launch_all, const std::function<void()>& copy_all,
                   double bytes_moved, cudaStream_t stream, StageTimes& times) {
  CudaEvent start, stop;
  const auto median_ms = [&](const std::function<void()>& work) {
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      start.record(stream);
      work();
      stop.record(stream);
      ms.push_back(CudaEvent::elapsed_ms(start, stop));
    }
    return median_of(std::move(ms));
  };
  times.bench_runs = runs;
  times.bytes_moved = bytes_moved;
  // The copy overwrites the output buffers, so it goes first: the last kernel run leaves the result.
  times.copy_roof_ms = median_ms(copy_all);
  times.kernel_median_ms = median_ms(launch_all);
}

/// Scales a copy time measured over `copied` bytes each way to the kernel's bytes_moved.
void scale_copy_roof(StageTimes& times, double copied) {
  if (copied > 0) times.copy_roof_ms *= times.bytes_moved / (2.0 * copied);
}

/// The memory roof for one plane pair: a contiguous device-to-device copy (cudaMemcpy2D between
/// pitched planes runs at about half the bandwidth) of as many bytes as fit both buffers.
/// Returns the bytes copied (read once, written once).
std::size_t copy_plane(const PlaneView& from, const PlaneView& to, cudaStream_t stream) {
  const std::size_t bytes = std::min(from.pitch * from.rows, to.pitch * to.rows);
  CUCONV_CUDA_TRY(cudaMemcpyAsync(to.data, from.data, bytes, cudaMemcpyDeviceToDevice, stream));
  return bytes;
}

/// --gpu-memory, or the device's free memory less a margin for the CUDA context's own growth,
/// cuFFT's plans and other processes. What a kept workspace holds counts as free: it is reused,
/// or freed before a larger buffer is allocated (plan_strips_for).
std::uint64_t memory_limit(const ConvolveJob& job, const GpuWorkspace::State& workspace) {
  if (job.gpu_memory_limit > 0) return job.gpu_memory_limit;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CUCONV_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::uint64_t available = free_bytes + workspace.device_bytes();
  const std::uint64_t margin = std::max<std::uint64_t>(available / 10, std::uint64_t{256} << 20);
  return available > margin ? available - margin : 0;
}

/// The strip plan for one image, the input rows a strip holds on the device, and the device
/// bytes its planes must keep within.
struct StripBudget {
  StripPlan plan;
  std::size_t rows_held = 0;
  std::uint64_t limit = 0;
};

/// The strips for this image under --gpu-memory (or the automatic limit): the same plan as a call
/// without a workspace gets. The image uses `slots` of the workspace's planes; planes in further
/// slots (an earlier image's extra channels) stay while this image's planes fit beside them, so a
/// batch of mixed channel counts stops reallocating, and are freed when they do not.
StripBudget plan_strips_for(const cv::Mat& src, const ConvolveJob& job, const MemoryModel& model,
                            GpuWorkspace::State& workspace, std::size_t slots) {
  StripBudget budget;
  budget.limit = memory_limit(job, workspace);
  budget.plan = plan_strips(src.cols, src.rows, job.kh(), model, budget.limit, job.max_strip_rows);
  budget.rows_held =
      static_cast<std::size_t>(budget.plan.count == 1 ? src.rows : budget.plan.rows_per_strip + job.kh() - 1);
  if (model.bytes_for(budget.rows_held) + workspace.device_bytes_from_slot(slots) > budget.limit)
    workspace.keep_planes(slots);
  return budget;
}

/// The image row (or the border-value row) that stands in row `y` of a strip under the border rule.
const unsigned char* strip_source_row(const cv::Mat& image, int y, const ConvolveJob& job, const cv::Mat& constant_row) {
  const int from = source_row(y, image.rows, job.border);  // -1: constant
  return from < 0 ? constant_row.data : image.ptr(from);
}

/// Rows [begin, end) of `image` into the plane's first rows. Rows outside the image are made on
/// the host by the border rule (`constant_row` holds the border value), so the strip the kernel
/// sees is exactly the rows it would have read. Pageable copies: a call's own state.
void upload_rows(const cv::Mat& image, int begin, int end, const PlaneView& plane, const ConvolveJob& job,
                 const cv::Mat& constant_row, cudaStream_t stream) {
  const int inside_begin = std::clamp(begin, 0, image.rows);
  const int inside_end = std::clamp(end, 0, image.rows);
  auto* plane_rows = static_cast<unsigned char*>(plane.data);
  const auto plane_row = [&](int y) { return plane_rows + static_cast<std::size_t>(y - begin) * plane.pitch; };
  CUCONV_CUDA_TRY(cudaMemcpy2DAsync(plane_row(inside_begin), plane.pitch, image.ptr(inside_begin), image.step,
                                    plane.row_bytes, static_cast<std::size_t>(inside_end - inside_begin),
                                    cudaMemcpyHostToDevice, stream));
  for (int y = begin; y < end; ++y) {
    if (y >= inside_begin && y < inside_end) continue;
    CUCONV_CUDA_TRY(cudaMemcpyAsync(plane_row(y), strip_source_row(image, y, job, constant_row), plane.row_bytes,
                                    cudaMemcpyHostToDevice, stream));
  }
}

/// A row of `cols` pixels of `type` holding the border value (only read for Border::constant).
cv::Mat constant_border_row(int cols, int type, const ConvolveJob& job) {
  return cv::Mat(1, cols, type, cv::Scalar::all(job.border_value));
}

/// The strip's output rows from the device plane into rows [out_begin, out_end) of `image`.
void download_rows(const PlaneView& plane, const StripRows& rows, cv::Mat& image, cudaStream_t stream) {
  const auto* first = static_cast<const unsigned char*>(plane.data) +
                      static_cast<std::size_t>(rows.first_valid) * plane.pitch;
  CUCONV_CUDA_TRY(cudaMemcpy2DAsync(image.ptr(rows.out_begin), image.step, first, plane.pitch, plane.row_bytes,
                                    static_cast<std::size_t>(rows.output_rows()), cudaMemcpyDeviceToHost, stream));
}

/// Staged copies move chunks of about this size, at most kMaxStagingChunks per copy: the host's
/// copy of one chunk into (or out of) pinned memory overlaps the transfer of the one before.
constexpr std::size_t kStagingChunkBytes = std::size_t{4} << 20;
constexpr int kMaxStagingChunks = 16;

/// kStagingChunkBytes, or CUCONV_TEST_STAGING_CHUNK_BYTES (test aid: small chunks make every
/// image, strip and channel plane go through several chunks).
std::size_t staging_chunk_bytes() {
  const char* value = std::getenv("CUCONV_TEST_STAGING_CHUNK_BYTES");
  const long long bytes = value != nullptr ? std::atoll(value) : 0;
  return bytes > 0 ? static_cast<std::size_t>(bytes) : kStagingChunkBytes;
}

int staging_chunk_rows(std::size_t row_bytes, int rows) {
  const int by_size = static_cast<int>(std::max<std::size_t>(1, staging_chunk_bytes() / std::max<std::size_t>(row_bytes, 1)));
  const int by_count = (rows + kMaxStagingChunks - 1) / kMaxStagingChunks;
  return std::max({by_size, by_count, 1});
}

/// upload_rows through `staging` (pinned, packed rows): each chunk is copied there on the host,
/// then its transfer is queued, while the host goes on with the next chunk.
void upload_rows_staged(const cv::Mat& image, int begin, int end, const PlaneView& plane, const ConvolveJob& job,
                        const cv::Mat& constant_row, PinnedBuffer& staging, cudaStream_t stream) {
  const std::size_t row_bytes = plane.row_bytes;
  const int chunk_rows = staging_chunk_rows(row_bytes, end - begin);
  for (int first = begin; first < end; first += chunk_rows) {
    const int last = std::min(end, first + chunk_rows);
    unsigned char* staged = staging.data() + static_cast<std::size_t>(first - begin) * row_bytes;
    for (int y = first; y < last; ++y)
      std::memcpy(staged + static_cast<std::size_t>(y - first) * row_bytes,
                  strip_source_row(image, y, job, constant_row), row_bytes);
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(static_cast<unsigned char*>(plane.data) +
                                          static_cast<std::size_t>(first - begin) * plane.pitch,
                                      plane.pitch, staged, row_bytes, row_bytes,
                                      static_cast<std::size_t>(last - first), cudaMemcpyHostToDevice, stream));
  }
}

/// download_rows through `staging`: all chunk transfers are queued, each followed by an event;
/// the host copies a chunk out as soon as its event has passed. Returns once `image` has them all.
void download_rows_staged(const PlaneView& plane, const StripRows& rows, cv::Mat& image, PinnedBuffer& staging,
                          GpuWorkspace::State& workspace, cudaStream_t stream) {
  const std::size_t row_bytes = plane.row_bytes;
  const int count = rows.output_rows();
  const int chunk_rows = staging_chunk_rows(row_bytes, count);
  const auto* plane_first = static_cast<const unsigned char*>(plane.data) +
                            static_cast<std::size_t>(rows.first_valid) * plane.pitch;
  std::size_t chunk = 0;
  for (int first = 0; first < count; first += chunk_rows, ++chunk) {
    const int n = std::min(count - first, chunk_rows);
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(staging.data() + static_cast<std::size_t>(first) * row_bytes, row_bytes,
                                      plane_first + static_cast<std::size_t>(first) * plane.pitch, plane.pitch,
                                      row_bytes, static_cast<std::size_t>(n), cudaMemcpyDeviceToHost, stream));
    workspace.chunk_event(chunk).record(stream);
  }
  chunk = 0;
  for (int first = 0; first < count; first += chunk_rows, ++chunk) {
    const int n = std::min(count - first, chunk_rows);
    CUCONV_CUDA_TRY(cudaEventSynchronize(workspace.chunk_event(chunk).get()));
    for (int y = first; y < first + n; ++y)
      std::memcpy(image.ptr(rows.out_begin + y), staging.data() + static_cast<std::size_t>(y) * row_bytes, row_bytes);
  }
}

/// Moves strips between host and device: staged through the workspace's pinned buffers when it
/// is kept between calls (allocated once, reused), else pageable copies (pinning memory for one
/// call costs more than it saves).
struct StripCopier {
  GpuWorkspace::State& workspace;
  const ConvolveJob& job;
  const cv::Mat& constant_row;

  void upload(const cv::Mat& image, const StripRows& rows, const PlaneView& plane, std::size_t slot) const {
    const cudaStream_t stream = workspace.stream();
    if (!workspace.kept) return upload_rows(image, rows.in_begin, rows.in_end, plane, job, constant_row, stream);
    PinnedBuffer& staging = workspace.staging(2 * slot, plane.row_bytes * static_cast<std::size_t>(rows.input_rows()));
    upload_rows_staged(image, rows.in_begin, rows.in_end, plane, job, constant_row, staging, stream);
  }
  void download(const PlaneView& plane, const StripRows& rows, cv::Mat& image, std::size_t slot) const {
    const cudaStream_t stream = workspace.stream();
    if (!workspace.kept) return download_rows(plane, rows, image, stream);
    PinnedBuffer& staging =
        workspace.staging(2 * slot + 1, plane.row_bytes * static_cast<std::size_t>(rows.output_rows()));
    download_rows_staged(plane, rows, image, staging, workspace, stream);
  }
};

void add_times(const StageTimes& strip, StageTimes& total) {
  total.upload_ms += strip.upload_ms;
  total.kernel_ms += strip.kernel_ms;
  total.download_ms += strip.download_ms;
}

/// --bench times one kernel run over the whole image against a copy of the same bytes; strips
/// would time uploads and downloads as well, so it needs the image in one piece.
void check_bench_fits(const ConvolveJob& job, const StripPlan& plan) {
  if (job.bench_runs > 0 && plan.count > 1)
    throw Error(ErrorKind::usage, "--bench times the kernel over the whole image, but this image needs " +
                                      std::to_string(plan.count) +
                                      " strips within the GPU memory limit (raise --gpu-memory)");
}

LaunchArgs launch_args(const PlaneView& in, int in_depth, const PlaneView& out, const ConvolveJob& job,
                       int width, int height, const float* device_weights, cudaStream_t stream) {
  return LaunchArgs{in.data,
                    in.pitch,
                    pixel_type_for_depth(in_depth),
                    out.data,
                    out.pitch,
                    pixel_type_for_depth(job.output_depth),
                    width,
                    height,
                    conv_params(job),
                    device_weights,
                    job.weights.data(),
                    stream};
}

/// `fast` and `fft` filter interleaved rows in place: one pitched plane of width * channels elements in
/// and out, one launch per strip, no split or merge on the host.
ConvolveResult convolve_gpu_interleaved(const cv::Mat& src, const ConvolveJob& job, Variant variant,
                                        GpuWorkspace::State& workspace) {
  const int channels = src.channels();
  const int width = src.cols;
  const int height = src.rows;
  const std::size_t row_elems = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  const std::size_t in_row_bytes = src.elemSize1() * row_elems;
  const std::size_t out_row_bytes = CV_ELEM_SIZE1(job.output_depth) * row_elems;

  MemoryModel model;
  model.fixed_bytes = sizeof(float) * job.weights.size();
  model.bytes_per_row = plane_pitch(in_row_bytes) + plane_pitch(out_row_bytes);
  if (variant == Variant::fft) {
    // Its tile batch (at most the input in float) and cuFFT's work area (about as large) per row;
    // the filter spectrum and the smallest batch, one tile each, and a tile of slack.
    model.bytes_per_row += 2 * sizeof(float) * row_elems;
    const std::uint64_t tile_side = static_cast<std::uint64_t>(fft_tile_side(job.kw(), width)) + 2;
    model.fixed_bytes += 3 * sizeof(float) * tile_side * static_cast<std::uint64_t>(fft_tile_side(job.kh(), height));
    if (job.output_depth != CV_32F) {
      // The tie repair list (launch_fft.cu, fft_repair_capacity): 8 bytes per 32 outputs, 1024 more.
      model.bytes_per_row += sizeof(long long) * row_elems / 32 + sizeof(long long);
      model.fixed_bytes += sizeof(long long) * 1025;
    }
  }
  const StripBudget budget = plan_strips_for(src, job, model, workspace, 2);  // in and out
  const StripPlan& plan = budget.plan;
  check_bench_fits(job, plan);
  const std::size_t rows_held = budget.rows_held;
  workspace.fit_planes({in_row_bytes, out_row_bytes}, rows_held, budget.limit);

  const cudaStream_t stream = workspace.stream();
  StageEvents& events = workspace.events();
  const float* device_weights = workspace.upload_weights(job.weights, stream);
  const PlaneView in_capacity = workspace.plane(0, in_row_bytes, rows_held);
  const PlaneView out_capacity = workspace.plane(1, out_row_bytes, rows_held);
  const cv::Mat constant_row = constant_border_row(width, src.type(), job);
  const StripCopier copier{workspace, job, constant_row};

  ConvolveResult result;
  result.image.create(height, width, CV_MAKETYPE(job.output_depth, channels));
  result.strips = plan.count;
  LaunchArgs args{};
  for (int strip = 0; strip < plan.count; ++strip) {
    const StripRows rows = strip_rows(plan, strip, height, job.kh(), job.anchor_y);
    const auto strip_rows_held = static_cast<std::size_t>(rows.input_rows());
    const PlaneView in_plane{in_capacity.data, in_capacity.pitch, in_row_bytes, strip_rows_held};
    const PlaneView out_plane{out_capacity.data, out_capacity.pitch, out_row_bytes, strip_rows_held};
    events.upload_start.record(stream);
    copier.upload(src, rows, in_plane, 0);
    if (job.poison_output) poison_plane(out_plane, job.output_depth, stream);
    events.upload_done.record(stream);

    args = launch_args(in_plane, src.depth(), out_plane, job, width, rows.input_rows(), device_weights, stream);
    args.channels = channels;
    args.keep_alpha = job.keep_alpha && channels == 4;
    if (job.separable) {
      args.separable_horizontal = job.separable->horizontal.data();
      args.separable_vertical = job.separable->vertical.data();
    }
    launch_variant(variant, args);
    events.kernels_done.record(stream);
    copier.download(out_plane, rows, result.image, 0);
    events.download_done.record(stream);
    add_times(events.times(), result.times);  // waits for this strip: the next reuses the planes
  }

  StageTimes bench;
  if (job.bench_runs > 0) {  // one strip: args cover the whole image, whose result is downloaded
    const PlaneView in_plane{in_capacity.data, in_capacity.pitch, in_row_bytes, rows_held};
    const PlaneView out_plane{out_capacity.data, out_capacity.pitch, out_row_bytes, rows_held};
    run_benchmark(job.bench_runs, [&] { launch_variant(variant, args); },
                  [&] { copy_plane(in_plane, out_plane, stream); },
                  static_cast<double>(in_row_bytes + out_row_bytes) * height, stream, bench);
    scale_copy_roof(bench, static_cast<double>(std::min(in_plane.pitch, out_plane.pitch) * rows_held));
  }
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  result.variant_used = variant;
  copy_bench_times(bench, result.times);
  return result;
}

/// The PMPP variants: one plane per filtered channel, split and merged on the host.
ConvolveResult convolve_gpu_planar(const cv::Mat& src, const ConvolveJob& job, Variant variant,
                                   GpuWorkspace::State& workspace) {
  const int channels = src.channels();
  const int width = src.cols;
  const int height = src.rows;
  const std::size_t in_row_bytes = src.elemSize1() * static_cast<std::size_t>(width);
  const std::size_t out_row_bytes = CV_ELEM_SIZE1(job.output_depth) * static_cast<std::size_t>(width);
  const int filtered_channels = job.keep_alpha && channels == 4 ? 3 : channels;

  MemoryModel model;
  model.fixed_bytes = sizeof(float) * job.weights.size();
  model.bytes_per_row = static_cast<std::uint64_t>(filtered_channels) *
                        (plane_pitch(in_row_bytes) + plane_pitch(out_row_bytes));
  // In and out per channel.
  const StripBudget budget =
      plan_strips_for(src, job, model, workspace, 2 * static_cast<std::size_t>(filtered_channels));
  const StripPlan& plan = budget.plan;
  check_bench_fits(job, plan);
  const std::size_t rows_held = budget.rows_held;
  std::vector<std::size_t> slot_row_bytes;
  for (int c = 0; c < filtered_channels; ++c) slot_row_bytes.insert(slot_row_bytes.end(), {in_row_bytes, out_row_bytes});
  workspace.fit_planes(slot_row_bytes, rows_held, budget.limit);

  const cudaStream_t stream = workspace.stream();
  StageEvents& events = workspace.events();

  std::vector<cv::Mat> host_in;
  cv::split(src, host_in);
  std::vector<cv::Mat> host_out(static_cast<std::size_t>(channels));
  for (int c = 0; c < filtered_channels; ++c) host_out[static_cast<std::size_t>(c)].create(height, width, job.output_depth);
  const cv::Mat constant_row = constant_border_row(width, src.depth(), job);
  const StripCopier copier{workspace, job, constant_row};

  const float* device_weights = workspace.upload_weights(job.weights, stream);
  std::vector<PlaneView> in_capacity;
  std::vector<PlaneView> out_capacity;
  for (std::size_t c = 0; c < static_cast<std::size_t>(filtered_channels); ++c) {
    in_capacity.push_back(workspace.plane(2 * c, in_row_bytes, rows_held));
    out_capacity.push_back(workspace.plane(2 * c + 1, out_row_bytes, rows_held));
  }
  // Channel c's planes holding `rows` rows.
  const auto in_plane = [&](std::size_t c, std::size_t rows) {
    return PlaneView{in_capacity[c].data, in_capacity[c].pitch, in_row_bytes, rows};
  };
  const auto out_plane = [&](std::size_t c, std::size_t rows) {
    return PlaneView{out_capacity[c].data, out_capacity[c].pitch, out_row_bytes, rows};
  };

  ConvolveResult result;
  result.strips = plan.count;
  std::vector<LaunchArgs> launches;
  const auto launch_all = [&] {
    for (const LaunchArgs& args : launches) launch_variant(variant, args);
  };
  for (int strip = 0; strip < plan.count; ++strip) {
    const StripRows rows = strip_rows(plan, strip, height, job.kh(), job.anchor_y);
    const auto strip_rows_held = static_cast<std::size_t>(rows.input_rows());
    events.upload_start.record(stream);
    for (std::size_t c = 0; c < in_capacity.size(); ++c) {
      copier.upload(host_in[c], rows, in_plane(c, strip_rows_held), c);
      if (job.poison_output) poison_plane(out_plane(c, strip_rows_held), job.output_depth, stream);
    }
    events.upload_done.record(stream);

    launches.clear();
    for (std::size_t c = 0; c < in_capacity.size(); ++c)
      launches.push_back(launch_args(in_plane(c, strip_rows_held), src.depth(), out_plane(c, strip_rows_held), job,
                                     width, rows.input_rows(), device_weights, stream));
    launch_all();
    events.kernels_done.record(stream);
    for (std::size_t c = 0; c < out_capacity.size(); ++c)
      copier.download(out_plane(c, strip_rows_held), rows, host_out[c], c);
    events.download_done.record(stream);
    add_times(events.times(), result.times);  // waits for this strip: the next reuses the planes
  }

  StageTimes bench;
  if (job.bench_runs > 0) {  // one strip: `launches` cover the whole image, whose result is downloaded
    run_benchmark(
        job.bench_runs, launch_all,
        [&] {
          for (std::size_t c = 0; c < in_capacity.size(); ++c)
            copy_plane(in_plane(c, rows_held), out_plane(c, rows_held), stream);
        },
        static_cast<double>(in_row_bytes + out_row_bytes) * height * filtered_channels, stream, bench);
    scale_copy_roof(bench, static_cast<double>(std::min(in_capacity[0].pitch, out_capacity[0].pitch) * rows_held *
                                               static_cast<std::size_t>(filtered_channels)));
  }
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));

  // Alpha passed through (--alpha keep): converted to the output depth, values unchanged.
  for (int c = filtered_channels; c < channels; ++c)
    host_in[static_cast<std::size_t>(c)].convertTo(host_out[static_cast<std::size_t>(c)], job.output_depth);

  cv::merge(host_out, result.image);
  result.variant_used = variant;
  copy_bench_times(bench, result.times);
  return result;
}

}  // namespace

void launch_variant(Variant variant, const LaunchArgs& args) {
  // Test-only (gpu/fault_injection.hpp): fail exactly as a faulting launch reports itself.
  if (launch_fault_injected())
    throw_cuda_error(cudaErrorLaunchFailure, "launch_variant (test fault CUCONV_TEST_GPU_FAULT=launch)", __FILE__,
                     __LINE__);
  switch (variant) {
    case Variant::basic: return launch_basic(args);
    case Variant::constmem: return launch_constmem(args);
    case Variant::tiled: return launch_tiled(args);
    case Variant::tiled_halo: return launch_tiled_halo(args);
    case Variant::cached: return launch_cached(args);
    case Variant::fast: return launch_fast(args);
    case Variant::fft: return launch_fft(args);
    case Variant::automatic:
    case Variant::opencv: break;
  }
  throw Error(ErrorKind::internal, "launch_variant called with a non-GPU variant");
}

ConvolveResult convolve_gpu(const cv::Mat& src, const ConvolveJob& job, Variant variant,
                            GpuWorkspace::State* kept_workspace) {
  std::optional<GpuWorkspace::State> call_workspace;
  GpuWorkspace::State& workspace = kept_workspace != nullptr ? *kept_workspace : call_workspace.emplace(false);
  workspace.bind_to_current_device();
  try {
    return filters_interleaved(variant)
               ? convolve_gpu_interleaved(src, job, variant, workspace)
               : convolve_gpu_planar(src, job, variant, workspace);
  } catch (...) {
    // Work queued before the failure may still read or write the kept buffers; the next call
    // must find them idle. (A call's own state waits in its destructor.)
    if (workspace.kept && workspace.has_stream()) {
      cudaStreamSynchronize(workspace.stream());
      cudaGetLastError();
    }
    throw;
  }
}

}  // namespace detail
}  // namespace cuconv
