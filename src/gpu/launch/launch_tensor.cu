// SPDX-License-Identifier: Apache-2.0
// Launcher of the `tensor` variant, on a GPU with MMA (sm_80 and newer), no kept alpha. 8-bit in
// and out: a rank-1 filter whose split meets the pass rule (centred square) on
// kernels/tensor_separable_mma.cuh for radii 4-15 where its bound holds, else on
// kernels/tensor_separable.cuh (radii 1-8); kernels/tensor_dense.cuh for any other filter of sides up to 17
// whose dense split meets it (on an sm_90 GPU one channel runs kernels/tensor_dense_wgmma.cuh instead,
// launch_tensor_wgmma.cu). Float or 16-bit in and out, and 8-bit past 17 a side:
// kernels/tensor_dense_planes.cuh (launch_tensor_planes.cu). `fast` otherwise.
#include "filter/splits.hpp"
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/occupancy.cuh"
#include "gpu/launch/tensor_dense_taps.cuh"
#include "gpu/seams.hpp"

#include <kernels/tensor_dense.cuh>
#include <kernels/tensor_separable.cuh>
#include <kernels/tensor_separable_mma.cuh>

#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

namespace cuconv::gpu {

namespace {

static_assert(filter::kTensorDenseMaxSide == kernels::kDenseMaxSide);

/// Warps a block: 4 (256 outputs of a row) ran faster than 2 and 8 (bench/results/kernel-notes/tensor.md, 'tensor').
constexpr int kTensorWarps = 4;

/// The both-passes kernel: 4 warps (256 pixels of a row at one channel, of 4 pixel tiles a warp;
/// 64 pixels at three or four, a warp's tiles its channels of 16 pixels), and from which radius
/// it replaces the FP32-vertical one: its time hardly grows with the filter; level at 7x7, level
/// or faster at 9x9, faster at 15x15 (bench/results/kernel-notes/tensor.md, 'Both passes on tensor cores').
constexpr int kTensorMmaWarps = 4;
constexpr int kTensorMmaMinRadius = 4;
constexpr int kTensorMmaMaxRadius = filter::kTensorMmaMaxSide / 2;
// The error bound counts the kernel's row-sum steps (tensor_mma_row_steps in src/filter/splits.hpp).
static_assert([] {
  for (int r = kTensorMmaMinRadius; r <= kTensorMmaMaxRadius; ++r)
    if (filter::tensor_mma_row_steps(2 * r + 1) != kernels::tensor_mma_vertical_steps(r)) return false;
  return true;
}());

}  // namespace

bool device_has_mma() {
  static std::array<std::atomic<int>, 64> cached{};
  return cached_device_answer(cached, [](int device) {
    int major = 0;
    CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 8;
  });
}

namespace {

/// FP16 bits of an integer of magnitude at most 2048 (exact).
unsigned short half_bits(int v) {
  if (v == 0) return 0;
  const unsigned sign = v < 0 ? 0x8000u : 0u;
  unsigned m = static_cast<unsigned>(v < 0 ? -v : v);
  int e = 0;
  while ((m >> e) > 1) ++e;                            // m in [2^e, 2^(e+1))
  const unsigned mantissa = (m << (10 - e)) & 0x3FFu;  // exact: m has at most 11 significant bits
  return static_cast<unsigned short>(sign | (static_cast<unsigned>(e + 15) << 10) | mantissa);
}

/// sum |w| of the filter's kh x kw weights.
double weights_magnitude(const LaunchArgs& a) {
  double sum = 0.0;
  for (int i = 0; i < a.params.kw * a.params.kh; ++i) sum += std::abs(static_cast<double>(a.weights.host[i]));
  return sum;
}

template <int C, int R, int Warps>
void launch_tensor_kernel(const LaunchArgs& a, const filter::TensorSplit& split) {
  using namespace kernels;
  constexpr int K = 2 * R + 1;
  TensorSeparableTaps<K> taps{};
  for (int j = 0; j < K; ++j) {
    taps.hi[j] = half_bits(split.high[static_cast<std::size_t>(j)]);
    taps.lo[j] = half_bits(split.low[static_cast<std::size_t>(j)]);
    taps.vertical[j] = std::ldexp(a.rank1.vertical[j], -split.exponent);
  }
  constexpr auto kernel = tensor_separable_kernel<C, R, Warps>;
  constexpr int kShared = tensor_shared_bytes(Warps, C, R);
  constexpr int kThreads = 32 * Warps;
  reserve_shared_memory(kernel, kShared, "tensor", a.params.kw, a.params.kh);
  const int row_elems = a.width * C;
  const int column_blocks = div_up(row_elems, tensor_tile_elems(Warps));
  const int resident = resident_blocks<kernel>(kThreads, kShared);
  const int strip_rows = strip_rows_for_waves(a.height, column_blocks, resident);
  const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
  const bool aligned = reinterpret_cast<std::uintptr_t>(a.src.data) % 16 == 0 && a.src.pitch % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(a.dst.data) % 16 == 0 && a.dst.pitch % 16 == 0;
  // Sums of 8-bit pixels below -2^22 need the low clamp before the rounding addition.
  const bool clamp_low = 255.0 * weights_magnitude(a) + std::abs(static_cast<double>(a.params.delta)) >= 4194304.0;
  PlaneView<const std::uint8_t> src{static_cast<const std::uint8_t*>(a.src.data), a.src.pitch, a.width, a.height};
  PlaneView<std::uint8_t> dst{static_cast<std::uint8_t*>(a.dst.data), a.dst.pitch, a.width, a.height};
  kernel<<<grid, dim3(kThreads), kShared, a.stream>>>(src, dst, a.params, taps, aligned, strip_rows, clamp_low);
  CUCONV_CHECK_LAUNCH();
  notify_launch(KernelPath::tensor_rank1);
}

template <int C, int R>
void launch_tensor_mma_kernel(const LaunchArgs& a, const filter::TensorSplit& split,
                              const filter::TensorMmaScales& scales) {
  using namespace kernels;
  constexpr int K = 2 * R + 1;
  TensorSeparableMmaTaps<K> taps{};
  // FP16 rounded to nearest: exact for the horizontal parts (tensor_mma_scales checked it); the
  // vertical weights are V' = hi + lo, lo rounded.
  const auto fp16_bits = [](double v) { return __half_as_ushort(__double2half(v)); };
  for (int j = 0; j < K; ++j) {
    const auto u = static_cast<std::size_t>(j);
    taps.bits[j] = fp16_bits(std::ldexp(split.high[u], 11 - scales.sigma));
    taps.bits[K + j] = fp16_bits(std::ldexp(split.low[u], -scales.sigma));
    const double v = std::ldexp(static_cast<double>(a.rank1.vertical[j]), scales.tau);
    const __half hi = __double2half(v);
    taps.bits[2 * K + j] = __half_as_ushort(hi);
    taps.bits[3 * K + j] = fp16_bits(v - static_cast<double>(__half2float(hi)));
  }
  taps.scale = std::ldexp(1.0f, scales.sigma - split.exponent - scales.tau);
  const double delta = static_cast<double>(a.params.delta);
  // Sums below 2^21 in magnitude and an integral delta: one rounding FMA, no clamp before it.
  const bool simple = 255.0 * weights_magnitude(a) + std::abs(delta) < 2097152.0 && delta == std::nearbyint(delta);
  const auto run = [&](auto kernel_constant) {
    constexpr auto kernel = decltype(kernel_constant)::value;
    constexpr int kShared = tensor_mma_shared_bytes(kTensorMmaWarps, C, R);
    constexpr int kThreads = 32 * kTensorMmaWarps;
    reserve_shared_memory(kernel, kShared, "tensor", a.params.kw, a.params.kh);
    const int column_blocks = div_up(a.width, tensor_mma_tile_pixels(kTensorMmaWarps, C, R));
    const int resident = resident_blocks<kernel>(kThreads, kShared);
    const int strip_rows = strip_rows_for_waves(a.height, column_blocks, resident);
    const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
    const bool aligned = reinterpret_cast<std::uintptr_t>(a.src.data) % 16 == 0 && a.src.pitch % 16 == 0;
    const bool vector_store = reinterpret_cast<std::uintptr_t>(a.dst.data) % 16 == 0 && a.dst.pitch % 16 == 0;
    PlaneView<const std::uint8_t> src{static_cast<const std::uint8_t*>(a.src.data), a.src.pitch, a.width, a.height};
    PlaneView<std::uint8_t> dst{static_cast<std::uint8_t*>(a.dst.data), a.dst.pitch, a.width, a.height};
    kernel<<<grid, dim3(kThreads), kShared, a.stream>>>(src, dst, a.params, taps, aligned, vector_store, strip_rows,
                                                        static_cast<float>(delta + 12582912.0));
    CUCONV_CHECK_LAUNCH();
  };
  constexpr auto kSimple = tensor_separable_mma_kernel<C, R, kTensorMmaWarps, true>;
  constexpr auto kGeneral = tensor_separable_mma_kernel<C, R, kTensorMmaWarps, false>;
  if (simple) {
    run(std::integral_constant<decltype(kSimple), kSimple>{});
  } else {
    run(std::integral_constant<decltype(kGeneral), kGeneral>{});
  }
  notify_launch(KernelPath::tensor_rank1_mma);
}

template <int C, int Chunks>
void launch_dense_kernel(const LaunchArgs& a, const filter::DenseTensorSplit& split) {
  using namespace kernels;
  const int kw = a.params.kw;
  const int kh = a.params.kh;
  const TensorDenseTaps taps = dense_taps_for(split, kw, kh);
  constexpr auto kernel = tensor_dense_kernel<C, Chunks>;
  constexpr int kThreads = 32 * kDenseWarps;
  const int shared = dense_shared_bytes(C, Chunks, kh);
  reserve_shared_memory(kernel, static_cast<std::size_t>(shared), "tensor", kw, kh);
  const int column_blocks = div_up(a.width, dense_tile_pixels(C));
  // Resident blocks at the largest filter (the query is cached per kernel): only the strip length uses it.
  const int resident =
      resident_blocks<kernel>(kThreads, static_cast<std::size_t>(dense_shared_bytes(C, Chunks, kDenseMaxSide)));
  const int strip_rows = strip_rows_for_waves(a.height, column_blocks, resident);
  const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
  const bool word_aligned = reinterpret_cast<std::uintptr_t>(a.src.data) % 4 == 0 && a.src.pitch % 4 == 0;
  const bool vector_aligned = reinterpret_cast<std::uintptr_t>(a.dst.data) % 16 == 0 && a.dst.pitch % 16 == 0;
  PlaneView<const std::uint8_t> src{static_cast<const std::uint8_t*>(a.src.data), a.src.pitch, a.width, a.height};
  PlaneView<std::uint8_t> dst{static_cast<std::uint8_t*>(a.dst.data), a.dst.pitch, a.width, a.height};
  kernel<<<grid, dim3(kThreads), static_cast<std::size_t>(shared), a.stream>>>(src, dst, a.params, taps, word_aligned,
                                                                               vector_aligned, strip_rows);
  CUCONV_CHECK_LAUNCH();
  notify_launch(KernelPath::tensor_dense);
}

bool rank_one_applies(const LaunchArgs& a) {
  return a.rank1.horizontal != nullptr && a.rank1.vertical != nullptr && a.params.kw == a.params.kh &&
         a.params.kw % 2 == 1 && a.params.anchor_x == a.params.kw / 2 && a.params.anchor_y == a.params.kh / 2 &&
         tensor_separable_supported(a.params.kw / 2, a.rank1.fits_tensor_split, a.rank1.fits_tensor_mma_split);
}

/// 8-bit in and out, 1, 3 or 4 channels, no kept alpha, a GPU with MMA.
bool tensor_types_apply(const LaunchArgs& a) {
  return a.src.type == PixelType::u8 && a.dst.type == PixelType::u8 && !a.keep_alpha &&
         (a.channels == 1 || a.channels == 3 || a.channels == 4) && device_has_mma();
}

bool tensor_applies(const LaunchArgs& a) { return tensor_types_apply(a) && rank_one_applies(a); }

}  // namespace

bool tensor_separable_supported(int radius, bool fp32_columns, bool mma) {
  return (fp32_columns && in_tensor_radii(radius)) ||
         (mma && radius >= kTensorMmaMinRadius && radius <= kTensorMmaMaxRadius);
}

bool tensor_dense_applies(const LaunchArgs& a) {
  return a.dense_tensor != nullptr && a.dense_tensor->holds && a.params.kw <= filter::kTensorDenseMaxSide &&
         a.params.kh <= filter::kTensorDenseMaxSide && tensor_types_apply(a);
}

void launch_tensor(const LaunchArgs& a) {
  if (tensor_applies(a)) {
    const std::vector<float> horizontal(a.rank1.horizontal, a.rank1.horizontal + a.params.kw);
    if (const std::optional<filter::TensorSplit> split = filter::tensor_split(horizontal)) {
      bool launched = false;
      dispatch_channels(a.channels, [&](auto channels) {
        dispatch_radius<SeparableRadii>(a.params.kw, a.params.kh, [&](auto radius) {
          if constexpr (radius.value >= kTensorMmaMinRadius && radius.value <= kTensorMmaMaxRadius) {
            if (a.rank1.fits_tensor_mma_split) {
              const std::vector<float> vertical(a.rank1.vertical, a.rank1.vertical + a.params.kh);
              if (const std::optional<filter::TensorMmaScales> scales = filter::tensor_mma_scales(*split, vertical)) {
                launch_tensor_mma_kernel<channels.value, radius.value>(a, *split, *scales);
                launched = true;
                return;
              }
            }
          }
          if constexpr (radius.value != kernels::kRuntimeRadius && in_tensor_radii(radius.value)) {
            if (a.rank1.fits_tensor_split) {
              launch_tensor_kernel<channels.value, radius.value, kTensorWarps>(a, *split);
              launched = true;
            }
          }
        });
      });
      if (launched) return;
    }
  }
  if (tensor_dense_applies(a)) {
    if (launch_tensor_dense_wgmma(a, *a.dense_tensor)) return;
    dispatch_channels(a.channels, [&](auto channels) {
      if (a.params.kw <= 9) {
        launch_dense_kernel<channels.value, 2>(a, *a.dense_tensor);  // two 8-byte chunks a filter row
      } else {
        launch_dense_kernel<channels.value, 3>(a, *a.dense_tensor);
      }
    });
    return;
  }
  if (launch_tensor_dense_planes(a)) return;
  launch_fast(a);
}

}  // namespace cuconv::gpu
