// SPDX-License-Identifier: Apache-2.0
#pragma once
// The compiled `fast` kernels for one (In, Out, Separable): included by the launch_fast_*.cu
// files, each of which instantiates one combination (parallel builds). The grid is one block of
// four warps per 128 * kVec elements of a row by strips of rows (src/gpu/launch/fast_rules.cuh); the
// occupancy it reads is queried once per kernel and device (src/gpu/launch/occupancy.cuh).
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/fast_rules.cuh"
#include "gpu/launch/occupancy.cuh"

#include <kernels/fast.cuh>

#include <algorithm>
#include <cstdint>

namespace cuconv::gpu {

template <class In, class Out, bool Separable>
bool launch_fast_compiled(const LaunchArgs& a) {
  using namespace kernels;
  using Radii = std::conditional_t<Separable, SeparableRadii, SupportedRadii>;
  bool launched = false;
  dispatch_channels(a.channels, [&](auto channels) {
    dispatch_radius<Radii>(a.params.kw, a.params.kh, [&](auto radius) {
      constexpr int R = radius.value;
      if constexpr (R != kRuntimeRadius) {
        if (a.params.anchor_x != R) return;  // the unrolled window is centred
        constexpr int K = 2 * R + 1;
        FilterTaps<Separable ? 2 * K : K * K> taps{};
        if constexpr (Separable) {
          for (int j = 0; j < K; ++j) taps.w[j] = a.rank1.horizontal[j];
          for (int i = 0; i < K; ++i) taps.w[K + i] = a.rank1.vertical[i];
        } else {
          for (int t = 0; t < K * K; ++t) taps.w[t] = a.weights.host[t];
        }
        constexpr auto kernel = fast_kernel<In, Out, channels.value, R, Separable>;
        const int column_blocks = fast_column_blocks<In, R>(a.width * channels.value);
        const int strip_rows =
            fast_strip_rows_for<In, R, Separable>(a.height, column_blocks, resident_blocks<kernel>(kFastThreads));
        const dim3 block(kFastBlockX, kFastBlockY);
        const dim3 grid = strip_grid(column_blocks, a.height, strip_rows);
        // Vector loads and stores need 16-byte aligned rows (plane_pitch and cudaMallocPitch give 512).
        const bool aligned = reinterpret_cast<std::uintptr_t>(a.src.data) % 16 == 0 && a.src.pitch % 16 == 0 &&
                             reinterpret_cast<std::uintptr_t>(a.dst.data) % 16 == 0 && a.dst.pitch % 16 == 0;
        kernels::PlaneView<const In> src{static_cast<const In*>(a.src.data), a.src.pitch, a.width, a.height};
        kernels::PlaneView<Out> dst{static_cast<Out*>(a.dst.data), a.dst.pitch, a.width, a.height};
        const SumRange sum_range = fast_sum_range<In, R, Separable>(taps, a.params.delta);
        kernel<<<grid, block, 0, a.stream>>>(src, dst, a.params, taps, a.keep_alpha, aligned, strip_rows, sum_range);
        CUCONV_CHECK_LAUNCH();
        launched = true;
      }
    });
  });
  return launched;
}

}  // namespace cuconv::gpu
