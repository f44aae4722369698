// SPDX-License-Identifier: Apache-2.0
// `fast` on tiny images (kernels/fast_tile.cuh): one tile of 32 elements x 8 rows a block, the
// grid covering the image once, when fast_tile_applies (src/gpu/launch/fast_rules.cuh) and the
// filter is a square in FastTileRadii; the weights travel as a kernel argument. A launch observer
// (gpu/seams.hpp) may turn it off, so the tests compare it with fast_kernel on one input.
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/fast_rules.cuh"
#include "gpu/seams.hpp"

#include <kernels/fast_tile.cuh>

#include <cstdint>
#include <tuple>

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

bool fast_tile_runs(int kw, int kh, int row_elems, int height) {
  if (row_elems <= 0 || height <= 0) return false;
  bool runs = false;
  dispatch_radius<FastTileRadii>(kw, kh, [&](auto radius) {
    if constexpr (radius.value != kernels::kRuntimeRadius) runs = fast_tile_applies(radius.value, row_elems, height);
  });
  return runs;
}

bool launch_fast_tile(const LaunchArgs& a) {
  if (!launch_allowed(KernelPath::fast_tile) || !tile_types(a.src.type, a.dst.type) ||
      !fast_tile_runs(a.params.kw, a.params.kh, a.width * a.channels, a.height))
    return false;
  bool launched = false;
  dispatch_types<FastTileTypePairs>(a.src.type, a.dst.type, [&](auto pair) {
    using Pair = decltype(pair);
    dispatch_radius<FastTileRadii>(a.params.kw, a.params.kh, [&](auto radius) {
      constexpr int R = radius.value;
      if constexpr (R != kernels::kRuntimeRadius) {
        constexpr int K = 2 * R + 1;
        kernels::FilterTaps<K * K> taps{};
        for (int t = 0; t < K * K; ++t) taps.w[t] = a.weights.host[t];
        const dim3 block(kernels::kFastTileW, kernels::kFastTileH);
        const dim3 grid(static_cast<unsigned>(kernels::div_up(a.width * a.channels, kernels::kFastTileW)),
                        static_cast<unsigned>(kernels::div_up(a.height, kernels::kFastTileH)));
        kernels::fast_tile_kernel<typename Pair::in, typename Pair::out, R><<<grid, block, 0, a.stream>>>(
            source_view<Pair>(a), destination_view<Pair>(a), a.params, taps, a.channels, a.keep_alpha);
        CUCONV_CHECK_LAUNCH();
        notify_launch(KernelPath::fast_tile);
        launched = true;
      }
    });
  });
  return launched;
}

}  // namespace cuconv::gpu
