// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file device_image.hpp
/// Images in device memory, the seam between codecs, kernels and callers: DeviceImage owns one
/// pitched allocation of interleaved pixels; DeviceImageView and ConstDeviceImageView are the
/// non-owning views passed by value to convolve() and the launchers (RMM's buffer/view split).
/// No CUDA headers: a stream is passed as a StreamHandle (the same type as cudaStream_t).
#include <cstddef>
#include <type_traits>

struct CUstream_st;

namespace cuconv {

/// A CUDA stream (cudaStream_t); nullptr is the legacy default stream.
using StreamHandle = CUstream_st*;

/// Bytes of one channel value of an OpenCV depth (CV_8U, CV_16U, CV_16S, CV_32F); 0 for others.
[[nodiscard]] std::size_t depth_bytes(int depth) noexcept;

/// `height` rows of `width` pixels of `channels` interleaved values of OpenCV depth `depth`, rows
/// `pitch` bytes apart, in device memory. A view may cover part of a larger allocation.
template <class Byte>
struct BasicDeviceImageView {
  static_assert(std::is_same_v<std::remove_const_t<Byte>, std::byte>);
  Byte* data = nullptr;
  std::size_t pitch = 0;
  int width = 0;
  int height = 0;
  int channels = 1;
  int depth = 0;  ///< CV_8U, CV_16U, CV_16S or CV_32F

  /// Bytes of the pixels of one row (without the pitch's padding).
  [[nodiscard]] std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(channels) * depth_bytes(depth);
  }
  /// Start of row `y`.
  [[nodiscard]] Byte* row(int y) const noexcept { return data + static_cast<std::size_t>(y) * pitch; }
  /// Rows [first, first + count) as an image of their own.
  [[nodiscard]] BasicDeviceImageView rows(int first, int count) const noexcept {
    BasicDeviceImageView part = *this;
    part.data = row(first);
    part.height = count;
    return part;
  }
  /// A read-only view of the same pixels.
  template <class To, class = std::enable_if_t<!std::is_const_v<Byte> &&
                                               std::is_same_v<To, BasicDeviceImageView<const std::byte>>>>
  operator To() const noexcept {
    return {data, pitch, width, height, channels, depth};
  }
};
using DeviceImageView = BasicDeviceImageView<std::byte>;
using ConstDeviceImageView = BasicDeviceImageView<const std::byte>;

/// An owning, move-only pitched device image on the device current at construction
/// (cudaMallocPitch). Throws cuconv::Error{gpu} when the allocation fails; the destructor frees
/// without throwing.
class DeviceImage {
 public:
  DeviceImage() = default;
  DeviceImage(int width, int height, int channels, int depth);
  DeviceImage(DeviceImage&& other) noexcept;
  DeviceImage& operator=(DeviceImage&& other) noexcept;
  DeviceImage(const DeviceImage&) = delete;
  DeviceImage& operator=(const DeviceImage&) = delete;
  ~DeviceImage();

  [[nodiscard]] DeviceImageView view() const noexcept { return view_; }
  [[nodiscard]] bool empty() const noexcept { return view_.data == nullptr; }

 private:
  DeviceImageView view_;
};

}  // namespace cuconv
