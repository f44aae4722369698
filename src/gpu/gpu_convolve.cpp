// The GPU path: split the image into one pitched device plane per channel, run the variant on
// each plane, bring the planes back and merge them. Stage times come from CUDA events.
#include "gpu/device_memory.hpp"
#include "gpu/launch.hpp"
#include "job.hpp"

#include <opencv2/core.hpp>

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

}  // namespace

void launch_variant(Variant variant, const LaunchArgs& args) {
  switch (variant) {
    case Variant::basic: return launch_basic(args);
    case Variant::constmem: return launch_constmem(args);
    case Variant::tiled: return launch_tiled(args);
    case Variant::tiled_halo: return launch_tiled_halo(args);
    case Variant::cached: return launch_cached(args);
    case Variant::automatic:
    case Variant::opencv: break;
  }
  throw Error(ErrorKind::internal, "launch_variant called with a non-GPU variant");
}

ConvolveResult convolve_gpu(const cv::Mat& src, const ConvolveJob& job, Variant variant) {
  const int channels = src.channels();
  const int width = src.cols;
  const int height = src.rows;
  const std::size_t in_elem = src.elemSize1();
  const std::size_t out_elem = CV_ELEM_SIZE1(job.output_depth);

  CudaStream stream;
  CudaEvent upload_start, upload_done, kernels_done, download_done;

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

  upload_start.record(stream.get());
  CUCONV_CUDA_TRY(cudaMemcpyAsync(device_weights.data(), job.weights.data(), device_weights.size(),
                                  cudaMemcpyHostToDevice, stream.get()));
  for (int c = 0; c < filtered_channels; ++c) {
    const cv::Mat& plane = host_in[static_cast<std::size_t>(c)];
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(in_planes[c].data(), in_planes[c].pitch(), plane.data, plane.step,
                                      in_planes[c].row_bytes(), in_planes[c].rows(),
                                      cudaMemcpyHostToDevice, stream.get()));
    if (job.poison_output) poison_plane(out_planes[c], job.output_depth, stream.get());
  }
  upload_done.record(stream.get());

  for (int c = 0; c < filtered_channels; ++c) {
    const LaunchArgs args{in_planes[c].data(),
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
                          stream.get()};
    launch_variant(variant, args);
  }
  kernels_done.record(stream.get());

  for (int c = 0; c < filtered_channels; ++c) {
    cv::Mat& plane = host_out[static_cast<std::size_t>(c)];
    plane.create(height, width, job.output_depth);
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(plane.data, plane.step, out_planes[c].data(), out_planes[c].pitch(),
                                      out_planes[c].row_bytes(), out_planes[c].rows(),
                                      cudaMemcpyDeviceToHost, stream.get()));
  }
  download_done.record(stream.get());
  stream.synchronize();

  // Alpha passed through (--alpha keep): converted to the output depth, values unchanged.
  for (int c = filtered_channels; c < channels; ++c)
    host_in[static_cast<std::size_t>(c)].convertTo(host_out[static_cast<std::size_t>(c)], job.output_depth);

  ConvolveResult result;
  cv::merge(host_out, result.image);
  result.variant_used = variant;
  result.times.upload_ms = CudaEvent::elapsed_ms(upload_start, upload_done);
  result.times.kernel_ms = CudaEvent::elapsed_ms(upload_done, kernels_done);
  result.times.download_ms = CudaEvent::elapsed_ms(kernels_done, download_done);
  return result;
}

}  // namespace detail
}  // namespace cuconv
