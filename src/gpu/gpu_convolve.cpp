// SPDX-License-Identifier: Apache-2.0
// The GPU path. Every variant filters one device image of interleaved channels into another
// (queue_filter): `fast` and `fft` read the interleaved rows directly; the PMPP variants filter one
// channel at a time through two one-channel scratch planes (split, filter, merge on the device).
// A host image goes through in horizontal strips that fit the device memory limit, each uploaded
// into the workspace's input image, filtered and downloaded (convolve_gpu); a caller's device
// image is filtered straight into the caller's output (convolve_device). docs/design.md has the
// whole pipeline.
#include "gpu/gpu_convolve.hpp"
#include "common/names.hpp"
#include "gpu/bench_timing.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu/memory/device_memory.hpp"
#include "gpu/memory/host_transfer.hpp"
#include "gpu/memory/strips.hpp"
#include "gpu/memory/workspace.hpp"
#include "gpu/seams.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuconv {

namespace gpu {

PixelType pixel_type_for_depth(int depth) {
  switch (depth) {
    case CV_8U:
      return PixelType::u8;
    case CV_16U:
      return PixelType::u16;
    case CV_16S:
      return PixelType::s16;
    case CV_32F:
      return PixelType::f32;
    default:
      throw Error(ErrorKind::internal, "no device pixel type for this depth");
  }
}

namespace {

/// Whether `variant` filters `channels` interleaved channels one plane at a time (the PMPP
/// variants, which read one-channel planes).
bool splits_channels(Variant variant, int channels) { return !filters_interleaved(variant) && channels > 1; }

kernels::ConvParams conv_params(const ConvolveJob& job) {
  return {job.kw(),
          job.kh(),
          job.anchor_x,
          job.anchor_y,
          static_cast<float>(job.delta),
          static_cast<kernels::BorderRule>(static_cast<int>(job.border)),
          static_cast<float>(job.border_value)};
}

/// Garbage a kernel must overwrite: NaN for float images, 0xA5 bytes for integer ones.
void poison(const DeviceImageView& image, cudaStream_t stream) {
  const int byte = image.depth == CV_32F ? 0xFF : 0xA5;
  CUCONV_CUDA_TRY(cudaMemset2DAsync(image.data, image.pitch, byte, image.row_bytes(),
                                    static_cast<std::size_t>(image.height), stream));
}

/// `variant`'s launch from `in` to `out` (all their channels, interleaved).
VariantLaunch launch_for(const ConstDeviceImageView& in, const DeviceImageView& out, const ConvolveJob& job,
                         const float* device_weights, cudaStream_t stream) {
  LaunchArgs args{{in.data, in.pitch, pixel_type_for_depth(in.depth)},
                  {out.data, out.pitch, pixel_type_for_depth(out.depth)},
                  in.width,
                  in.height,
                  conv_params(job),
                  {device_weights, job.weights.data(), job.kernel.isContinuous() ? job.kernel.ptr<double>() : nullptr},
                  stream};
  args.channels = in.channels;
  args.keep_alpha = job.keep_alpha && in.channels == 4;
  args.dense_tensor = job.dense_tensor ? &*job.dense_tensor : nullptr;
  if (job.separable) args.rank1 = rank1_weights(*job.separable, job.delta);
  return {args, in, out};
}

/// The two one-channel planes the PMPP variants filter a channel of a multi-channel image through.
struct ChannelPlanes {
  DeviceImageView in;
  DeviceImageView out;
};

/// Queues `variant` from `in` to `out` (same size and channels) on `stream`: one launch over the
/// interleaved rows, or per filtered channel a split into `planes`, a launch and a merge back;
/// alpha kept by --alpha keep is converted into `out` as it is. Returns the variant's launches
/// alone, which --bench queues again.
std::vector<VariantLaunch> queue_filter(const ConstDeviceImageView& in, const DeviceImageView& out,
                                        const std::optional<ChannelPlanes>& planes, const ConvolveJob& job,
                                        Variant variant, const float* device_weights, cudaStream_t stream) {
  if (poison_outputs()) poison(out, stream);
  if (!planes) {
    VariantLaunch launch = launch_for(in, out, job, device_weights, stream);
    launch_variant(variant, launch.args);
    return {launch};
  }
  const bool keep_alpha = job.keep_alpha && in.channels == 4;
  std::vector<VariantLaunch> launches;
  for (int c = 0; c < (keep_alpha ? 3 : in.channels); ++c) {
    launch_copy_channel(in, c, planes->in, 0, stream);
    if (poison_outputs()) poison(planes->out, stream);
    launches.push_back(launch_for(planes->in, planes->out, job, device_weights, stream));
    launch_variant(variant, launches.back().args);
    launch_copy_channel(planes->out, 0, out, c, stream);
  }
  if (keep_alpha) launch_copy_channel(in, 3, out, 3, stream);
  return launches;
}

/// Device bytes a run of `variant` holds for a `width`-pixel image of `channels`: the weights, and
/// per input row held the input and output rows (plus the scratch planes' rows and `fft`'s tiles).
MemoryModel memory_model(const ConvolveJob& job, Variant variant, int width, int height, int channels,
                         int input_depth) {
  const auto row_bytes = [&](int depth, int values) {
    return depth_bytes(depth) * static_cast<std::size_t>(width) * static_cast<std::size_t>(values);
  };
  MemoryModel model;
  model.fixed_bytes = sizeof(float) * job.weights.size();
  model.bytes_per_row =
      plane_pitch(row_bytes(input_depth, channels)) + plane_pitch(row_bytes(job.output_depth, channels));
  if (splits_channels(variant, channels))
    model.bytes_per_row += plane_pitch(row_bytes(input_depth, 1)) + plane_pitch(row_bytes(job.output_depth, 1));
  if (variant == Variant::fft) {
    // Its tile batch (at most the input in float) and cuFFT's work area (about as large) per row;
    // the filter spectrum and the smallest batch, one tile each, and a tile of slack.
    const std::uint64_t row_elems = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(channels);
    model.bytes_per_row += 2 * sizeof(float) * row_elems;
    const std::uint64_t tile_side = static_cast<std::uint64_t>(fft_tile_side(job.kw(), width)) + 2;
    model.fixed_bytes += 3 * sizeof(float) * tile_side * static_cast<std::uint64_t>(fft_tile_side(job.kh(), height));
    if (job.output_depth != CV_32F) {
      // The tie repair list (launch_fft.cu, fft_repair_capacity): 8 bytes per 32 outputs, 1024 more.
      model.bytes_per_row += sizeof(long long) * row_elems / 32 + sizeof(long long);
      model.fixed_bytes += sizeof(long long) * 1025;
    }
  }
  return model;
}

/// --gpu-memory, or the device's free memory less a margin for the CUDA context's own growth,
/// cuFFT's plans and other processes. What a kept workspace holds counts as free: it is reused, or
/// freed before a larger buffer is allocated (fit_planes). A kept workspace asks the device once
/// (and again after a failure, convolve_gpu), not for every image.
std::uint64_t memory_limit(const ConvolveJob& job, gpu::WorkspaceState& workspace) {
  if (job.gpu_memory_limit > 0) return job.gpu_memory_limit;
  if (workspace.kept && workspace.automatic_limit > 0) return workspace.automatic_limit;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CUCONV_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::uint64_t available = free_bytes + workspace.device_bytes();
  const std::uint64_t margin = std::max<std::uint64_t>(available / 10, std::uint64_t{256} << 20);
  const std::uint64_t limit = available > margin ? available - margin : 0;
  if (workspace.kept) workspace.automatic_limit = limit;
  return limit;
}

void add_times(const StageTimes& strip, StageTimes& total) {
  total.upload_ms += strip.upload_ms;
  total.kernel_ms += strip.kernel_ms;
  total.download_ms += strip.download_ms;
}

/// A host image through the device in strips: upload, queue_filter, download, strip by strip.
ConvolveResult filter_host_image(const cv::Mat& src, const ConvolveJob& job, Variant variant,
                                 gpu::WorkspaceState& workspace, const cv::Mat& into) {
  const int width = src.cols;
  const int height = src.rows;
  const int channels = src.channels();
  const bool splits = splits_channels(variant, channels);

  // The strips, and the workspace's images kept within the limit: the input and output images
  // (slots 0 and 1) and, for a split, the two scratch planes (slots 2 and 3).
  const MemoryModel model = memory_model(job, variant, width, height, channels, src.depth());
  const std::uint64_t limit = memory_limit(job, workspace);
  const StripPlan plan = plan_strips(width, height, job.kh(), model, limit, max_strip_rows());
  if (job.bench_runs > 0 && plan.count > 1)
    throw Error(ErrorKind::usage, "`bench_runs` times the kernel over the whole image, but this image needs " +
                                      std::to_string(plan.count) +
                                      " strips within the GPU memory limit (raise `gpu_memory_limit`)");
  const int rows_held = plan.count == 1 ? height : plan.rows_per_strip + job.kh() - 1;
  const auto row_bytes = [&](int depth, int values) {
    return depth_bytes(depth) * static_cast<std::size_t>(width) * static_cast<std::size_t>(values);
  };
  std::vector<std::size_t> slot_row_bytes{row_bytes(src.depth(), channels), row_bytes(job.output_depth, channels)};
  if (splits) slot_row_bytes.insert(slot_row_bytes.end(), {row_bytes(src.depth(), 1), row_bytes(job.output_depth, 1)});
  workspace.fit_planes(slot_row_bytes, static_cast<std::size_t>(rows_held), model.bytes_for(rows_held), limit);

  const cudaStream_t stream = workspace.stream();
  StageEvents& events = workspace.events();
  const float* device_weights = workspace.device_weights(job.weights, stream);
  const DeviceImageView in_held = workspace.image(0, width, rows_held, channels, src.depth());
  const DeviceImageView out_held = workspace.image(1, width, rows_held, channels, job.output_depth);
  std::optional<ChannelPlanes> planes_held;
  if (splits)
    planes_held = ChannelPlanes{workspace.image(2, width, rows_held, 1, src.depth()),
                                workspace.image(3, width, rows_held, 1, job.output_depth)};
  const StripCopier copier(workspace, job, src);

  ConvolveResult result;
  result.image = into;  // a caller's image of this size and type is kept, not reallocated
  result.image.create(height, width, CV_MAKETYPE(job.output_depth, channels));
  result.strips = plan.count;
  std::vector<VariantLaunch> launches;
  for (int strip = 0; strip < plan.count; ++strip) {
    const StripRows rows = strip_rows(plan, strip, height, job.kh(), job.anchor_y);
    const DeviceImageView in = in_held.rows(0, rows.input_rows());
    const DeviceImageView out = out_held.rows(0, rows.input_rows());
    std::optional<ChannelPlanes> planes;
    if (planes_held)
      planes = ChannelPlanes{planes_held->in.rows(0, rows.input_rows()), planes_held->out.rows(0, rows.input_rows())};
    events.upload_start.record(stream);
    copier.upload(rows, in);
    events.upload_done.record(stream);
    launches = queue_filter(in, out, planes, job, variant, device_weights, stream);
    workspace.weights_read(stream);
    events.kernels_done.record(stream);
    copier.download(out, rows, result.image);
    events.download_done.record(stream);
    add_times(events.times(), result.times);  // waits for this strip: the next reuses the images
  }
  // One strip (checked above): `launches` cover the whole image, whose result is downloaded.
  if (job.bench_runs > 0) time_variant(variant, launches, job.bench_runs, stream, result.times);
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  result.variant_used = variant;
  return result;
}

}  // namespace

// Every GPU variant of the names table has a launcher, and every launcher a GPU variant's name.
// Variants compared, not find_launcher's pointer: under -fsanitize=undefined (the asan preset)
// GCC does not take a pointer's comparison with nullptr as a constant expression.
static_assert(
    [] {
      std::size_t gpu_names = 0;
      for (const auto& entry : common::kVariants) {
        const bool launched =
            std::any_of(kVariantLaunchers.begin(), kVariantLaunchers.end(),
                        [&](const VariantLauncher& launcher) { return launcher.variant == entry.value; });
        if (entry.gpu != launched) return false;
        gpu_names += entry.gpu;
      }
      return gpu_names == kVariantLaunchers.size();
    }(),
    "common::kVariants' GPU variants and kVariantLaunchers must list the same variants");

void launch_variant(Variant variant, const LaunchArgs& args) {
  // A test's fault injector (gpu/seams.hpp): fail exactly as a faulting launch reports itself.
  if (const cudaError_t fault = injected_launch_fault(variant); fault != cudaSuccess)
    throw_cuda_error(fault, "launch_variant (injected fault)", __FILE__, __LINE__);
  const VariantLauncher* launcher = find_launcher(variant);
  if (launcher == nullptr) throw Error(ErrorKind::internal, "launch_variant called with a non-GPU variant");
  launcher->launch(args);
}

ConvolveResult convolve_gpu(const cv::Mat& src, const ConvolveJob& job, Variant variant,
                            gpu::WorkspaceState* kept_workspace, const cv::Mat& into) {
  std::optional<gpu::WorkspaceState> call_workspace;
  gpu::WorkspaceState& workspace = kept_workspace != nullptr ? *kept_workspace : call_workspace.emplace(false);
  workspace.bind_to_current_device();
  try {
    return filter_host_image(src, job, variant, workspace, into);
  } catch (...) {
    // Work queued before the failure may still read or write the kept buffers; the next call
    // must find them idle, and ask the device afresh how much memory it has. (A call's own state
    // waits in its destructor.)
    workspace.automatic_limit = 0;
    if (workspace.kept && workspace.has_stream()) {
      cudaStreamSynchronize(workspace.stream());
      cudaGetLastError();
    }
    throw;
  }
}

void convolve_device(const ConstDeviceImageView& src, const DeviceImageView& dst, const ConvolveJob& job,
                     Variant variant, gpu::WorkspaceState& workspace, cudaStream_t stream) {
  workspace.bind_to_current_device();
  const float* device_weights = workspace.device_weights(job.weights, stream);
  // The PMPP variants' channel planes: stream-ordered scratch, freed in order after the launches,
  // so neither allocating nor freeing waits for the caller's stream.
  std::optional<StreamScratch> plane_memory;
  std::optional<ChannelPlanes> planes;
  if (splits_channels(variant, src.channels)) {
    DeviceImageView in{nullptr, 0, src.width, src.height, 1, src.depth};
    DeviceImageView out{nullptr, 0, src.width, src.height, 1, dst.depth};
    in.pitch = plane_pitch(in.row_bytes());
    out.pitch = plane_pitch(out.row_bytes());
    const std::size_t in_bytes = in.pitch * static_cast<std::size_t>(src.height);
    plane_memory.emplace(in_bytes + out.pitch * static_cast<std::size_t>(src.height), stream);
    in.data = static_cast<std::byte*>(plane_memory->data());
    out.data = in.data + in_bytes;
    planes = ChannelPlanes{in, out};
  }
  try {
    static_cast<void>(queue_filter(src, dst, planes, job, variant, device_weights, stream));
  } catch (...) {
    workspace.weights_read(stream);  // launches queued before the failure may read them
    throw;
  }
  workspace.weights_read(stream);
}

}  // namespace gpu
}  // namespace cuconv
