// Launcher of `tensor`'s dense kernel for float images (kernels/tensor_dense_float.cuh): float in
// and out, 1, 3 or 4 channels, no kept alpha, sides up to 31, a split within the pass rule, a GPU
// with byte MMA (sm_80 and newer).
#include "gpu/dispatch.cuh"
#include "gpu/occupancy.cuh"
#include "separable.hpp"

#include <kernels/tensor_dense_float.cuh>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

namespace cuconv::detail {

namespace {

std::atomic<std::uint64_t> float_launches{0};
static_assert(kTensorDenseFloatMaxSide == kernels::kDenseFloatMaxSide);

template <int Chunks, int RingRows>
void launch_dense_float_kernel(const LaunchArgs& a, const DenseTensorSplit& split) {
  using namespace kernels;
  static_assert(Chunks >= 2 && Chunks <= dense_float_chunks(kDenseFloatMaxSide));
  TensorDenseFloatTaps taps{};
  const int kw = a.params.kw;
  const int kh = a.params.kh;
  for (std::size_t d = 0; d < split.digits.size(); ++d)
    for (int k = 0; k < kw * kh; ++k) taps.digit[d][k] = static_cast<signed char>(split.digits[d][static_cast<std::size_t>(k)]);
  taps.exponent = split.exponent;
  constexpr auto kernel = tensor_dense_float_kernel<Chunks, RingRows>;
  constexpr int kThreads = 32 * kDenseFloatWarps;
  const int shared = dense_float_shared_bytes(Chunks, RingRows, kh);
  reserve_shared_memory(kernel, static_cast<std::size_t>(shared), "tensor", kw, kh);
  const int column_blocks = div_up(a.width, kDenseFloatPixels) * a.channels;
  // Resident blocks at the tallest filter of this ring (cached per kernel): only the strip length uses it.
  const int tallest = RingRows == 32 ? 17 : kDenseFloatMaxSide;
  const int resident =
      resident_blocks<kernel>(kThreads, static_cast<std::size_t>(dense_float_shared_bytes(Chunks, RingRows, tallest)));
  const int strip_rows = strip_rows_for_waves(a.height, column_blocks, resident);
  const dim3 grid(static_cast<unsigned>(column_blocks),
                  static_cast<unsigned>(std::min(div_up(a.height, strip_rows), kMaxGridY)));
  const bool vector_aligned =
      a.channels == 1 && reinterpret_cast<std::uintptr_t>(a.dst) % 16 == 0 && a.dst_pitch % 16 == 0;
  PlaneView<const float> src{static_cast<const float*>(a.src), a.src_pitch, a.width, a.height};
  PlaneView<float> dst{static_cast<float*>(a.dst), a.dst_pitch, a.width, a.height};
  kernel<<<grid, dim3(kThreads), static_cast<std::size_t>(shared), a.stream>>>(
      src, dst, a.channels, a.params, taps, a.device_weights, vector_aligned, strip_rows);
  CUCONV_CHECK_LAUNCH();
  float_launches.fetch_add(1, std::memory_order_relaxed);
}

/// The kernel instance for the filter's width (8-byte chunks a row) and height (ring rows).
template <int RingRows>
void launch_for_width(const LaunchArgs& a, const DenseTensorSplit& split) {
  const int chunks = kernels::dense_float_chunks(a.params.kw);
  if (chunks <= 2) return launch_dense_float_kernel<2, RingRows>(a, split);
  if (chunks == 3) return launch_dense_float_kernel<3, RingRows>(a, split);
  if (chunks == 4) return launch_dense_float_kernel<4, RingRows>(a, split);
  launch_dense_float_kernel<5, RingRows>(a, split);
}

}  // namespace

std::uint64_t tensor_dense_float_kernel_launches() noexcept { return float_launches.load(std::memory_order_relaxed); }

bool tensor_dense_float_applies(const LaunchArgs& a) {
  return a.dense_tensor != nullptr && a.dense_tensor->holds && a.src_type == PixelType::f32 &&
         a.dst_type == PixelType::f32 && !a.keep_alpha && (a.channels == 1 || a.channels == 3 || a.channels == 4) &&
         a.params.kw <= kTensorDenseFloatMaxSide && a.params.kh <= kTensorDenseFloatMaxSide && device_has_mma();
}

bool launch_tensor_dense_float(const LaunchArgs& a) {
  if (!tensor_dense_float_applies(a)) return false;
  if (kernels::dense_float_ring_rows(a.params.kh) == 32) {
    launch_for_width<32>(a, *a.dense_tensor);
  } else {
    launch_for_width<64>(a, *a.dense_tensor);
  }
  return true;
}

}  // namespace cuconv::detail
