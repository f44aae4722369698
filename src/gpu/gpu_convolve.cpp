// The GPU path: split the image into one pitched device plane per channel, run the variant on
// each plane, bring the planes back and merge them. Stage times come from CUDA events.
#include "gpu/device_memory.hpp"
#include "gpu/launch.hpp"
#include "job.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <functional>
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

namespace {

PixelType pixel_type_for_depth(int depth) {
  switch (depth) {
    case CV_8U: return PixelType::u8;
    case CV_16U: return PixelType::u16;
    case CV_16S: return PixelType::s16;
    case CV_32F: return PixelType::f32;
    default: throw Error(ErrorKind::internal, "no device pixel type for this depth");
  }
}

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
void poison_plane(const DevicePlane& plane, int depth, cudaStream_t stream) {
  const int byte = depth == CV_32F ? 0xFF : 0xA5;
  CUCONV_CUDA_TRY(cudaMemset2DAsync(plane.data(), plane.pitch(), byte, plane.row_bytes(),
                                    plane.rows(), stream));
}

/// The four points that split a GPU run into upload, kernels and download times.
struct StageEvents {
  CudaEvent upload_start, upload_done, kernels_done, download_done;
  [[nodiscard]] StageTimes times() const {
    return {CudaEvent::elapsed_ms(upload_start, upload_done), CudaEvent::elapsed_ms(upload_done, kernels_done),
            CudaEvent::elapsed_ms(kernels_done, download_done)};
  }
};

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
std::size_t copy_plane(const DevicePlane& from, const DevicePlane& to, cudaStream_t stream) {
  const std::size_t bytes = std::min(from.pitch() * from.rows(), to.pitch() * to.rows());
  CUCONV_CUDA_TRY(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice, stream));
  return bytes;
}

/// `fast` and `fft` filter interleaved rows in place: one pitched plane of width * channels elements in
/// and out, one launch, no split or merge on the host.
ConvolveResult convolve_gpu_interleaved(const cv::Mat& src, const ConvolveJob& job, Variant variant) {
  const int channels = src.channels();
  const int width = src.cols;
  const int height = src.rows;
  const std::size_t row_elems = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  CudaStream stream;
  StageEvents events;
  DeviceBuffer device_weights(sizeof(float) * job.weights.size());
  DevicePlane in_plane(src.elemSize1() * row_elems, static_cast<std::size_t>(height));
  DevicePlane out_plane(CV_ELEM_SIZE1(job.output_depth) * row_elems, static_cast<std::size_t>(height));

  events.upload_start.record(stream.get());
  CUCONV_CUDA_TRY(cudaMemcpyAsync(device_weights.data(), job.weights.data(), device_weights.size(),
                                  cudaMemcpyHostToDevice, stream.get()));
  CUCONV_CUDA_TRY(cudaMemcpy2DAsync(in_plane.data(), in_plane.pitch(), src.data, src.step, in_plane.row_bytes(),
                                    in_plane.rows(), cudaMemcpyHostToDevice, stream.get()));
  if (job.poison_output) poison_plane(out_plane, job.output_depth, stream.get());
  events.upload_done.record(stream.get());

  LaunchArgs args{in_plane.data(),
                  in_plane.pitch(),
                  pixel_type_for_depth(src.depth()),
                  out_plane.data(),
                  out_plane.pitch(),
                  pixel_type_for_depth(job.output_depth),
                  width,
                  height,
                  conv_params(job),
                  static_cast<const float*>(device_weights.data()),
                  job.weights.data(),
                  stream.get()};
  args.channels = channels;
  args.keep_alpha = job.keep_alpha && channels == 4;
  if (job.separable) {
    args.separable_horizontal = job.separable->horizontal.data();
    args.separable_vertical = job.separable->vertical.data();
  }
  launch_variant(variant, args);
  events.kernels_done.record(stream.get());
  StageTimes bench;
  if (job.bench_runs > 0)
    run_benchmark(job.bench_runs, [&] { launch_variant(variant, args); },
                  [&] { copy_plane(in_plane, out_plane, stream.get()); },
                  static_cast<double>(in_plane.row_bytes() + out_plane.row_bytes()) * height, stream.get(), bench);
  if (job.bench_runs > 0)
    scale_copy_roof(bench, static_cast<double>(std::min(in_plane.pitch(), out_plane.pitch()) * in_plane.rows()));

  ConvolveResult result;
  result.image.create(height, width, CV_MAKETYPE(job.output_depth, channels));
  CUCONV_CUDA_TRY(cudaMemcpy2DAsync(result.image.data, result.image.step, out_plane.data(), out_plane.pitch(),
                                    out_plane.row_bytes(), out_plane.rows(), cudaMemcpyDeviceToHost, stream.get()));
  events.download_done.record(stream.get());
  stream.synchronize();
  result.variant_used = variant;
  result.times = events.times();
  copy_bench_times(bench, result.times);
  return result;
}

}  // namespace

void launch_variant(Variant variant, const LaunchArgs& args) {
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

ConvolveResult convolve_gpu(const cv::Mat& src, const ConvolveJob& job, Variant variant) {
  if (variant == Variant::fast || variant == Variant::fft) return convolve_gpu_interleaved(src, job, variant);
  const int channels = src.channels();
  const int width = src.cols;
  const int height = src.rows;
  const std::size_t in_elem = src.elemSize1();
  const std::size_t out_elem = CV_ELEM_SIZE1(job.output_depth);

  CudaStream stream;
  StageEvents events;

  std::vector<cv::Mat> host_in;
  cv::split(src, host_in);
  std::vector<cv::Mat> host_out(static_cast<std::size_t>(channels));
  const int filtered_channels = job.keep_alpha && channels == 4 ? 3 : channels;

  DeviceBuffer device_weights(sizeof(float) * job.weights.size());
  std::vector<DevicePlane> in_planes;
  std::vector<DevicePlane> out_planes;
  for (int c = 0; c < filtered_channels; ++c) {
    in_planes.emplace_back(in_elem * static_cast<std::size_t>(width), static_cast<std::size_t>(height));
    out_planes.emplace_back(out_elem * static_cast<std::size_t>(width), static_cast<std::size_t>(height));
  }

  events.upload_start.record(stream.get());
  CUCONV_CUDA_TRY(cudaMemcpyAsync(device_weights.data(), job.weights.data(), device_weights.size(),
                                  cudaMemcpyHostToDevice, stream.get()));
  for (int c = 0; c < filtered_channels; ++c) {
    const cv::Mat& plane = host_in[static_cast<std::size_t>(c)];
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(in_planes[c].data(), in_planes[c].pitch(), plane.data, plane.step,
                                      in_planes[c].row_bytes(), in_planes[c].rows(),
                                      cudaMemcpyHostToDevice, stream.get()));
    if (job.poison_output) poison_plane(out_planes[c], job.output_depth, stream.get());
  }
  events.upload_done.record(stream.get());

  std::vector<LaunchArgs> launches;
  for (int c = 0; c < filtered_channels; ++c) {
    launches.push_back(LaunchArgs{in_planes[c].data(),
                                  in_planes[c].pitch(),
                                  pixel_type_for_depth(src.depth()),
                                  out_planes[c].data(),
                                  out_planes[c].pitch(),
                                  pixel_type_for_depth(job.output_depth),
                                  width,
                                  height,
                                  conv_params(job),
                                  static_cast<const float*>(device_weights.data()),
                                  job.weights.data(),
                                  stream.get()});
  }
  const auto launch_all = [&] {
    for (const LaunchArgs& args : launches) launch_variant(variant, args);
  };
  launch_all();
  events.kernels_done.record(stream.get());
  StageTimes bench;
  if (job.bench_runs > 0)
    run_benchmark(
        job.bench_runs, launch_all,
        [&] {
          for (int c = 0; c < filtered_channels; ++c) copy_plane(in_planes[c], out_planes[c], stream.get());
        },
        static_cast<double>(in_planes[0].row_bytes() + out_planes[0].row_bytes()) * height * filtered_channels,
        stream.get(), bench);
  if (job.bench_runs > 0)
    scale_copy_roof(bench, static_cast<double>(std::min(in_planes[0].pitch(), out_planes[0].pitch()) *
                                               in_planes[0].rows() * filtered_channels));

  for (int c = 0; c < filtered_channels; ++c) {
    cv::Mat& plane = host_out[static_cast<std::size_t>(c)];
    plane.create(height, width, job.output_depth);
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(plane.data, plane.step, out_planes[c].data(), out_planes[c].pitch(),
                                      out_planes[c].row_bytes(), out_planes[c].rows(),
                                      cudaMemcpyDeviceToHost, stream.get()));
  }
  events.download_done.record(stream.get());
  stream.synchronize();

  // Alpha passed through (--alpha keep): converted to the output depth, values unchanged.
  for (int c = filtered_channels; c < channels; ++c)
    host_in[static_cast<std::size_t>(c)].convertTo(host_out[static_cast<std::size_t>(c)], job.output_depth);

  ConvolveResult result;
  cv::merge(host_out, result.image);
  result.variant_used = variant;
  result.times = events.times();
  copy_bench_times(bench, result.times);
  return result;
}

}  // namespace detail
}  // namespace cuconv
