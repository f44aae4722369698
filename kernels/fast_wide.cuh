// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_wide.cuh
/// `fast` on rank-1 filters over 16-bit images, summed in double precision. At 16-bit magnitudes
/// float row and column sums keep too few bits below the unit for the integer pass rule (a sum
/// near n + 1/2 rounds the wrong way too often); double keeps about 36, so results equal the exact
/// sum's except at ties the host has already excluded (src/filter/rank1_splits.cpp, separable_for).
///
/// Thread-to-data mapping: one thread per output element of an interleaved row (width * C
/// elements, taps C apart), a block of kWideThreads threads per kWideThreads elements, walking a
/// strip of rows downwards. Each input row is staged in shared memory as doubles (two slots, one
/// barrier a row); a thread sums its K row taps from there, then adds that row sum times each
/// vertical weight to the K outputs it feeds, held in registers as a ring whose slots the K-step
/// unrolled loop names at compile time. Sizes other than K x K (even, rectangular) run with the
/// weights past kw and kh set to zero.
#include "common.cuh"

#include <cstdint>

namespace cuconv::kernels {

inline constexpr int kWideThreads = 256;  ///< elements of a row per block, one per thread
inline constexpr int kWideMaxChannels = 4;

/// The factors in double; past kw (horizontal) and kh (vertical) zero.
template <int K>
struct WideTaps {
  double horizontal[K];
  double vertical[K];
  double delta;
};

/// A staged row: the block's elements and the (K - 1) * C columns the taps reach beyond them.
template <int K>
__host__ __device__ constexpr int wide_staged_elems() {
  return kWideThreads + (K - 1) * kWideMaxChannels;
}

template <class In, class Out, int K>
__global__ void __launch_bounds__(kWideThreads, 2)
    fast_wide_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, WideTaps<K> taps, int channels,
                     bool keep_alpha, int strip_rows) {
  constexpr int kStaged = wide_staged_elems<K>();
  constexpr int kPerThread = div_up(kStaged, kWideThreads);  // staged elements a thread loads
  __shared__ double staged[2][kStaged];

  const int row_elems = src.width * channels;
  const int e = blockIdx.x * kWideThreads + threadIdx.x;
  const int first = static_cast<int>(blockIdx.x) * kWideThreads - p.anchor_x * channels;  // element of staged[.][0]
  const int span = kWideThreads + (K - 1) * channels;
  // Where this thread's staged elements come from, the same in every row: found once. -1 is the
  // constant border, -2 an element no tap reads.
  int position[kPerThread];
#pragma unroll
  for (int q = 0; q < kPerThread; ++q) {
    const int i = static_cast<int>(threadIdx.x) + q * kWideThreads;
    const int g = first + i;
    if (i >= span) {
      position[q] = -2;
    } else if (g >= 0 && g < row_elems) {
      position[q] = g;
    } else {
      const int x = floor_div(g, channels);
      const int xx = interpolate_border(x, src.width, p.border);
      position[q] = xx < 0 ? -1 : xx * channels + (g - x * channels);
    }
  }
  const In constant = static_cast<In>(p.border_value);  // saturated to In already: exact
  In pending[kPerThread];
  const auto load_row = [&](int r) {
    const int yy = interpolate_border(r, src.height, p.border);
#pragma unroll
    for (int q = 0; q < kPerThread; ++q)
      pending[q] = position[q] == -2 ? In{} : (yy < 0 || position[q] < 0) ? constant : __ldg(src.row(yy) + position[q]);
  };
  const bool copies_alpha = keep_alpha && channels == 4 && e % 4 == 3;
  const int strips = div_up(src.height, strip_rows);

  for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
    const int y0 = strip * strip_rows;
    const int y_end = min(y0 + strip_rows, src.height);
    const int steps = y_end - y0 + K - 1;  // input rows: K - 1 of warm-up, then one output each
    const int r_first = y0 - p.anchor_y;
    double acc[K];
#pragma unroll
    for (int s = 0; s < K; ++s) acc[s] = taps.delta;
    load_row(r_first);
    for (int base = 0; base < steps; base += K) {
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const int n = base + s;  // step n reads input row r_first + n
        if (n >= steps) break;   // the same for the whole block
        double* row = staged[n & 1];
#pragma unroll
        for (int q = 0; q < kPerThread; ++q)
          if (position[q] != -2) row[threadIdx.x + q * kWideThreads] = static_cast<double>(pending[q]);
        __syncthreads();
        if (n + 1 < steps) load_row(r_first + n + 1);  // in flight while this row is summed
        // Four chains of row taps instead of one: a dependent chain of K FP64 FMAs per row stalled
        // the few warps an SM holds.
        double part[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
        for (int j = 0; j < K; ++j) part[j % 4] = fma(taps.horizontal[j], row[threadIdx.x + j * channels], part[j % 4]);
        const double h = (part[0] + part[1]) + (part[2] + part[3]);
        // Output m (m = 0 .. strip) takes tap i from step m + i: slot (s - i) mod K (base is a
        // multiple of K). Output n - (K - 1), in slot (s + 1) mod K, is then complete.
#pragma unroll
        for (int i = 0; i < K; ++i) acc[(s - i + K) % K] = fma(taps.vertical[i], h, acc[(s - i + K) % K]);
        const int done = (s + 1) % K;  // a constant once the loop is unrolled
        if (n >= K - 1 && e < row_elems) {
          const int y = y0 + n - (K - 1);
          dst.row(y)[e] = copies_alpha ? static_cast<Out>(src.row(y)[e]) : round_clamp_double<Out>(acc[done]);
        }
        acc[done] = taps.delta;
      }
    }
    __syncthreads();  // the next strip's first row goes into a slot this strip's last row may be read from
  }
}

}  // namespace cuconv::kernels
