// SPDX-License-Identifier: Apache-2.0
// `fast` on tiny images (kernels/fast_tile.cuh): one tile of 32 elements x 8 rows a block, the
// grid covering the image once, when fast_tile_applies (src/gpu/launch/fast_rules.cuh) and the
// filter is a square in FastTileRadii; the weights travel as a kernel argument. 16-bit rank-1
// filters that `fast` sums in double (fast_wide_runs) take its double sums where
// fast_tile_double_applies, and launch_fast_wide's kernel elsewhere. A launch observer
// (gpu/seams.hpp) may turn it off, so the tests compare it with fast_kernel on one input.
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/fast_rules.cuh"
#include "gpu/seams.hpp"

#include <kernels/fast_tile.cuh>

#include <cstdint>
#include <tuple>
#include <type_traits>

namespace cuconv::gpu {

namespace {

/// The pixel types with `fast`'s compiled kernels (one type in and out).
using FastTileTypePairs =
    std::tuple<TypePair<std::uint8_t, std::uint8_t>, TypePair<std::uint16_t, std::uint16_t>, TypePair<float, float>>;

bool tile_types(PixelType in, PixelType out) {
  return in == out && (in == PixelType::u8 || in == PixelType::u16 || in == PixelType::f32);
}

}  // namespace

long long fast_tile_count(int row_elems, int height) {
  if (row_elems <= 0 || height <= 0) return 0;
  return static_cast<long long>(kernels::div_up(row_elems, kernels::kFastTileW)) *
         kernels::div_up(height, kernels::kFastTileH);
}

bool fast_tile_runs(int kw, int kh, int row_elems, int height, bool sums_in_double) {
  if (row_elems <= 0 || height <= 0) return false;
  bool runs = false;
  dispatch_radius<FastTileRadii>(kw, kh, [&](auto radius) {
    if constexpr (radius.value != kernels::kRuntimeRadius)
      runs = sums_in_double ? fast_tile_double_applies(radius.value, row_elems, height)
                            : fast_tile_applies(radius.value, row_elems, height);
  });
  return runs;
}

namespace {

template <class Pair, int R, class Acc>
void launch_tile(const LaunchArgs& a) {
  constexpr int K = 2 * R + 1;
  kernels::TileTaps<Acc, K * K> taps{};
  // Double sums take the filter's weights and delta in double, those of the exact sum (the float
  // ones are their roundings: summed in double they would round the other way near a tie).
  if constexpr (std::is_same_v<Acc, double>) {
    for (int t = 0; t < K * K; ++t) taps.w[t] = a.weights.exact[t];
    taps.delta = a.rank1.wide_delta;
  } else {
    for (int t = 0; t < K * K; ++t) taps.w[t] = a.weights.host[t];
    taps.delta = a.params.delta;
  }
  const dim3 block(kernels::kFastTileW, kernels::kFastTileH);
  const dim3 grid(static_cast<unsigned>(kernels::div_up(a.width * a.channels, kernels::kFastTileW)),
                  static_cast<unsigned>(kernels::div_up(a.height, kernels::kFastTileH)));
  kernels::fast_tile_kernel<typename Pair::in, typename Pair::out, R, Acc><<<grid, block, 0, a.stream>>>(
      source_view<Pair>(a), destination_view<Pair>(a), a.params, taps, a.channels, a.keep_alpha);
  CUCONV_CHECK_LAUNCH();
  notify_launch(KernelPath::fast_tile);
}

}  // namespace

bool launch_fast_tile(const LaunchArgs& a) {
  // 16-bit rank-1 filters that `fast` sums exactly (fast_wide_runs) are summed in double here too
  // (with the double weights; without them launch_fast_wide's kernel sums them, never floats).
  const bool in_double = fast_wide_runs(a.src.type == PixelType::u16 && a.dst.type == PixelType::u16, a.params.kw,
                                        a.params.kh, a.channels, a.rank1.fits_double_rank1);
  if (!launch_allowed(KernelPath::fast_tile) || !tile_types(a.src.type, a.dst.type) ||
      (in_double && a.weights.exact == nullptr) ||
      !fast_tile_runs(a.params.kw, a.params.kh, a.width * a.channels, a.height, in_double))
    return false;
  bool launched = false;
  dispatch_types<FastTileTypePairs>(a.src.type, a.dst.type, [&](auto pair) {
    using Pair = decltype(pair);
    dispatch_radius<FastTileRadii>(a.params.kw, a.params.kh, [&](auto radius) {
      constexpr int R = radius.value;
      if constexpr (R != kernels::kRuntimeRadius) {
        if (!in_double) {
          launch_tile<Pair, R, float>(a);
          launched = true;
        } else if constexpr (std::is_same_v<typename Pair::out, std::uint16_t> && 2 * R + 1 >= kFastWideMinSide) {
          launch_tile<Pair, R, double>(a);
          launched = true;
        }
      }
    });
  });
  return launched;
}

}  // namespace cuconv::gpu
