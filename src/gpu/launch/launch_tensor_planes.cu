// SPDX-License-Identifier: Apache-2.0
// Launcher of `tensor`'s dense planes kernel (kernels/tensor_dense_planes.cuh): float in and out or
// 16-bit in and out with sides up to 31, 8-bit in and out with a side past the 8-bit kernel's 17
// (launch_tensor.cu) and up to 31; 1, 3 or 4 channels, no kept alpha, a split within the pass
// rule, a GPU with byte MMA (sm_80 and newer).
#include "filter/splits.hpp"
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/occupancy.cuh"
#include "gpu/seams.hpp"

#include <kernels/tensor_dense_planes.cuh>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace cuconv::gpu {

namespace {

static_assert(filter::kTensorDensePlanesMaxSide == kernels::kDensePlanesMaxSide);

template <class Pixel, int Chunks, int RingRows>
void launch_dense_planes_kernel(const LaunchArgs& a, const filter::DenseTensorSplit& split) {
  using namespace kernels;
  static_assert(Chunks >= 2 && Chunks <= dense_planes_chunks(kDensePlanesMaxSide));
  constexpr int kDigits = DensePlanes<Pixel>::weight_digits;
  if (split.digits.size() != static_cast<std::size_t>(kDigits))
    throw Error(ErrorKind::internal, "tensor: the dense split has " + std::to_string(split.digits.size()) +
                                         " weight digits where the kernel takes " + std::to_string(kDigits));
  TensorDensePlanesTaps<kDigits> taps{};
  const int kw = a.params.kw;
  const int kh = a.params.kh;
  for (std::size_t d = 0; d < split.digits.size(); ++d)
    for (int k = 0; k < kw * kh; ++k)
      taps.digit[d][k] = static_cast<signed char>(split.digits[d][static_cast<std::size_t>(k)]);
  taps.exponent = split.exponent;
  constexpr auto kernel = tensor_dense_planes_kernel<Pixel, Chunks, RingRows>;
  constexpr int kThreads = 32 * kDensePlanesWarps;
  const int shared = dense_planes_shared_bytes<Pixel>(Chunks, RingRows, kh);
  reserve_shared_memory(kernel, static_cast<std::size_t>(shared), "tensor", kw, kh);
  const int column_blocks = div_up(a.width, kDensePlanesPixels) * a.channels;
  // Resident blocks at the tallest filter of this ring (cached per kernel): only the strip length uses it.
  const int tallest = RingRows == 32 ? 17 : kDensePlanesMaxSide;
  const int resident = resident_blocks<kernel>(
      kThreads, static_cast<std::size_t>(dense_planes_shared_bytes<Pixel>(Chunks, RingRows, tallest)));
  const int strip_rows = strip_rows_for_waves(a.height, column_blocks, resident);
  const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
  const bool vector_aligned =
      a.channels == 1 && reinterpret_cast<std::uintptr_t>(a.dst.data) % 16 == 0 && a.dst.pitch % 16 == 0;
  PlaneView<const Pixel> src{static_cast<const Pixel*>(a.src.data), a.src.pitch, a.width, a.height};
  PlaneView<Pixel> dst{static_cast<Pixel*>(a.dst.data), a.dst.pitch, a.width, a.height};
  kernel<<<grid, dim3(kThreads), static_cast<std::size_t>(shared), a.stream>>>(
      src, dst, a.channels, a.params, taps, a.weights.device, vector_aligned, strip_rows);
  CUCONV_CHECK_LAUNCH();
  notify_launch(std::is_same_v<Pixel, float>           ? KernelPath::tensor_planes_f32
                : std::is_same_v<Pixel, std::uint16_t> ? KernelPath::tensor_planes_u16
                                                       : KernelPath::tensor_planes_u8);
}

/// The kernel instance for the filter's width (8-byte chunks a row) and height (ring rows).
template <class Pixel, int RingRows>
void launch_for_width(const LaunchArgs& a, const filter::DenseTensorSplit& split) {
  const int chunks = kernels::dense_planes_chunks(a.params.kw);
  if (chunks <= 2) return launch_dense_planes_kernel<Pixel, 2, RingRows>(a, split);
  if (chunks == 3) return launch_dense_planes_kernel<Pixel, 3, RingRows>(a, split);
  if (chunks == 4) return launch_dense_planes_kernel<Pixel, 4, RingRows>(a, split);
  launch_dense_planes_kernel<Pixel, 5, RingRows>(a, split);
}

template <class Pixel>
void launch_for_size(const LaunchArgs& a, const filter::DenseTensorSplit& split) {
  if (kernels::dense_planes_ring_rows(a.params.kh) == 32) {
    launch_for_width<Pixel, 32>(a, split);
  } else {
    launch_for_width<Pixel, 64>(a, split);
  }
}

}  // namespace

bool tensor_dense_planes_applies(const LaunchArgs& a) {
  const bool past_8bit_kernel = std::max(a.params.kw, a.params.kh) > filter::kTensorDenseMaxSide;
  const bool types = (a.src.type == PixelType::f32 && a.dst.type == PixelType::f32) ||
                     (a.src.type == PixelType::u16 && a.dst.type == PixelType::u16) ||
                     (a.src.type == PixelType::u8 && a.dst.type == PixelType::u8 && past_8bit_kernel);
  return a.dense_tensor != nullptr && a.dense_tensor->holds && types && !a.keep_alpha &&
         (a.channels == 1 || a.channels == 3 || a.channels == 4) && a.params.kw <= filter::kTensorDensePlanesMaxSide &&
         a.params.kh <= filter::kTensorDensePlanesMaxSide && device_has_mma();
}

bool launch_tensor_dense_planes(const LaunchArgs& a) {
  if (!tensor_dense_planes_applies(a)) return false;
  if (a.src.type == PixelType::f32) {
    launch_for_size<float>(a, *a.dense_tensor);
  } else if (a.src.type == PixelType::u16) {
    launch_for_size<std::uint16_t>(a, *a.dense_tensor);
  } else {
    launch_for_size<std::uint8_t>(a, *a.dense_tensor);
  }
  return true;
}

}  // namespace cuconv::gpu
