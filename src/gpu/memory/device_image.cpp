// SPDX-License-Identifier: Apache-2.0
// DeviceImage: the owning pitched device image (include/cuconv/device_image.hpp).
#include "gpu/memory/device_memory.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/device_image.hpp>
#include <cuconv/error.hpp>

#include <opencv2/core.hpp>

#include <string>
#include <utility>

namespace cuconv {

std::size_t depth_bytes(int depth) noexcept {
  switch (depth) {
    case CV_8U:
      return 1;
    case CV_16U:
    case CV_16S:
      return 2;
    case CV_32F:
      return 4;
    default:
      return 0;
  }
}

DeviceImage::DeviceImage(int width, int height, int channels, int depth) {
  if (width < 0 || height < 0 || channels < 1 || depth_bytes(depth) == 0)
    throw Error(ErrorKind::internal, "DeviceImage: invalid shape or depth");
  view_ = {nullptr, 0, width, height, channels, depth};
  std::size_t pitch = 0;
  view_.data =
      static_cast<std::byte*>(gpu::allocate_pitched(view_.row_bytes(), static_cast<std::size_t>(height), pitch));
  view_.pitch = pitch;
}

DeviceImage::DeviceImage(DeviceImage&& other) noexcept : view_(std::exchange(other.view_, DeviceImageView{})) {}

DeviceImage& DeviceImage::operator=(DeviceImage&& other) noexcept {
  std::swap(view_, other.view_);
  return *this;
}

DeviceImage::~DeviceImage() { cudaFree(view_.data); }  // no check: destructors never throw

DeviceImage upload(const cv::Mat& src) {
  DeviceImage image(src.cols, src.rows, src.channels(), src.depth());
  const DeviceImageView view = image.view();
  CUCONV_CUDA_TRY(cudaMemcpy2D(view.data, view.pitch, src.data, src.step, view.row_bytes(),
                               static_cast<std::size_t>(src.rows), cudaMemcpyHostToDevice));
  return image;
}

cv::Mat download(ConstDeviceImageView src) {
  cv::Mat image(src.height, src.width, CV_MAKETYPE(src.depth, src.channels));
  CUCONV_CUDA_TRY(cudaDeviceSynchronize());  // work queued on other streams too
  CUCONV_CUDA_TRY(cudaMemcpy2D(image.data, image.step, src.data, src.pitch, src.row_bytes(),
                               static_cast<std::size_t>(src.height), cudaMemcpyDeviceToHost));
  return image;
}

}  // namespace cuconv
