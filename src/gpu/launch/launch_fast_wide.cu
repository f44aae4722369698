// SPDX-License-Identifier: Apache-2.0
// Launcher of `fast`'s double-precision separable sums for 16-bit rank-1 filters from 15 to 31
// taps a side: one channel on the FP64 tensor cores (kernels/fast_wide_mma.cuh) where the GPU has
// them, else the FMA kernel (kernels/fast_wide.cuh). One instance per odd K, a filter of kw x kh
// taking the smallest K that holds both sides (weights past them zero).
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/occupancy.cuh"
#include "gpu/seams.hpp"

#include <kernels/fast_wide.cuh>
#include <kernels/fast_wide_mma.cuh>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

namespace cuconv::gpu {

namespace {

/// Sides with an instance: kFastWideMinSide (15), 17, ..., 31.
constexpr int kWideMaxSide = 31;
using WideSides = decltype([]<int... I>(std::integer_sequence<int, I...>) {
  return std::integer_sequence<int, (2 * I + kFastWideMinSide)...>{};
}(std::make_integer_sequence<int, (kWideMaxSide - kFastWideMinSide) / 2 + 1>{}));

template <int K>
void launch_wide_mma(const LaunchArgs& a, const kernels::WideTaps<K>& taps) {
  using namespace kernels;
  constexpr auto kernel = fast_wide_mma_kernel<K>;
  constexpr int kThreads = 32 * kWideMmaWarps;
  const int column_blocks = div_up(a.width, wide_mma_block_columns(K));
  const int strip_rows = strip_rows_for_warmup(a.height, column_blocks, resident_blocks<kernel>(kThreads),
                                               wide_mma_warmup_rows(K), kWideMmaTileRows);
  const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
  PlaneView<const std::uint16_t> src{static_cast<const std::uint16_t*>(a.src.data), a.src.pitch, a.width, a.height};
  PlaneView<std::uint16_t> dst{static_cast<std::uint16_t*>(a.dst.data), a.dst.pitch, a.width, a.height};
  kernel<<<grid, dim3(kThreads), 0, a.stream>>>(src, dst, a.params, taps, strip_rows);
  CUCONV_CHECK_LAUNCH();
  notify_launch(KernelPath::fast_double_rank1);
}

template <int K>
void launch_wide(const LaunchArgs& a) {
  using namespace kernels;
  WideTaps<K> taps{};
  for (int j = 0; j < a.params.kw; ++j) taps.horizontal[j] = a.rank1.horizontal_wide[j];
  for (int i = 0; i < a.params.kh; ++i) taps.vertical[i] = a.rank1.vertical_wide[i];
  taps.delta = a.rank1.wide_delta;
  if (fast_wide_mma_runs(a.channels) && device_has_mma()) {
    launch_wide_mma<K>(a, taps);
    return;
  }
  constexpr auto kernel = fast_wide_kernel<std::uint16_t, std::uint16_t, K>;
  const int row_elems = a.width * a.channels;
  const int column_blocks = div_up(row_elems, kWideThreads);
  const int strip_rows = strip_rows_for_warmup(a.height, column_blocks, resident_blocks<kernel>(kWideThreads), K - 1);
  const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
  PlaneView<const std::uint16_t> src{static_cast<const std::uint16_t*>(a.src.data), a.src.pitch, a.width, a.height};
  PlaneView<std::uint16_t> dst{static_cast<std::uint16_t*>(a.dst.data), a.dst.pitch, a.width, a.height};
  kernel<<<grid, dim3(kWideThreads), 0, a.stream>>>(src, dst, a.params, taps, a.channels, a.keep_alpha, strip_rows);
  CUCONV_CHECK_LAUNCH();
  notify_launch(KernelPath::fast_double_rank1);
}

}  // namespace

bool fast_wide_runs(bool sixteen_bit, int kw, int kh, int channels, bool double_rank1) {
  const int side = std::max(kw, kh);
  return sixteen_bit && double_rank1 && side >= kFastWideMinSide && side <= kWideMaxSide && channels >= 1 &&
         channels <= kernels::kWideMaxChannels;
}

bool fast_wide_mma_runs(int channels) { return channels == 1; }

bool launch_fast_wide(const LaunchArgs& a) {
  const int side = std::max(a.params.kw, a.params.kh);
  if (!fast_wide_runs(a.src.type == PixelType::u16 && a.dst.type == PixelType::u16, a.params.kw, a.params.kh,
                      a.channels, a.rank1.fits_double_rank1) ||
      a.rank1.horizontal_wide == nullptr || a.rank1.vertical_wide == nullptr)
    return false;
  return []<int... K>(const LaunchArgs& args, int s, std::integer_sequence<int, K...>) {
    return ((s <= K ? (launch_wide<K>(args), true) : false) || ...);
  }
  (a, side, WideSides{});
}

}  // namespace cuconv::gpu
