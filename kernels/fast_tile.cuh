// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_tile.cuh
/// `fast` on tiny images (a few blocks' worth: the Python package's 64 x 64 calls): one thread an
/// output element, the block's input tile in shared memory. fast_kernel's walk down a strip is a
/// chain of row loads and sums, so on a grid that runs at once its time is one block's walk; here
/// every input element of the tile is loaded at once (a few independent loads a thread), then the
/// K x K taps are summed from shared memory in filter row-major order from delta, the order of
/// fast_kernel's dense sums, so both give the same bits. 16-bit results that `fast` sums exactly
/// (rank-1 filters from 15x15, kernels/fast_wide.cuh) are summed in double here, with the filter's
/// double weights: the exact sum's own weights, order and precision.
#include "common.cuh"

#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kFastTileW = 32;  ///< output elements of a tile row: a warp, coalesced loads and stores
inline constexpr int kFastTileH = 8;   ///< output rows of a tile
inline constexpr int kFastTileThreads = kFastTileW * kFastTileH;
inline constexpr int kFastTileMaxChannels = 4;

/// The input tile of a K x K filter: kFastTileH + K - 1 rows of kFastTileW + (K - 1) * channels
/// elements (interleaved channels), stored with room for four channels.
template <int K>
struct FastTileShape {
  static constexpr int rows = kFastTileH + K - 1;
  static constexpr int stride = kFastTileW + (K - 1) * kFastTileMaxChannels;
  static constexpr int loads = div_up(rows * stride, kFastTileThreads);  ///< the most a thread makes
};

/// Output rows a thread sums, of a K x K filter: from 9x9 to 17x17 two (rows 2 ty and 2 ty + 1),
/// which read their K + 1 tile rows once for both, K (K + 1) shared loads for two outputs instead
/// of 2 K^2: 3-14% faster from 256 tiles, between 2% faster and 5% slower at 16-64 (H100, 836d777,
/// bench/results/kernel-notes/fast.md, 'Tiny images'). Below, the load phase dominates; from 19x19
/// the twice longer unrolled sum of four warps lost (31x31 at 16 tiles 13.2 -> 16.4 us, at 1024
/// 52.6 -> 61.0).
__host__ __device__ constexpr int fast_tile_rows_per_thread(int k) { return k >= 9 && k <= 17 ? 2 : 1; }

/// A K x K filter's weights and delta as the tile kernel sums them (Acc: float, or double for the
/// exact 16-bit sums).
template <class Acc, int Count>
struct TileTaps {
  Acc w[Count];
  Acc delta;
};

/// One fused multiply-add in the accumulator's precision.
__device__ __forceinline__ float fma_of(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_of(double a, double b, double c) { return fma(a, b, c); }

/// All 256 threads load the tile; thread (tx, ty) with ty < 8 / Rows then computes element
/// bx * 32 + tx of output rows by * 8 + ty * Rows + r (r < Rows) of an interleaved image of
/// `channels` (1, 3 or 4) channels; the grid covers the image once. Any anchor and border rule: the
/// tile starts anchor_y rows above and anchor_x pixels left of the block's outputs, each element
/// read through the border rule. `keep_alpha`: channel 3 of four is copied. Acc double: the tile
/// holds doubles (46 KiB at 31x31 and four channels) so the taps need no conversion, and results
/// round half to even from the double sum.
template <class In, class Out, int Radius, class Acc = float, int Rows = fast_tile_rows_per_thread(2 * Radius + 1)>
__global__ void __launch_bounds__(kFastTileThreads)
    fast_tile_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p,
                     TileTaps<Acc, (2 * Radius + 1) * (2 * Radius + 1)> taps, int channels, bool keep_alpha) {
  static_assert(std::is_same_v<Acc, float> || (std::is_same_v<Acc, double> && sizeof(Out) == 2),
                "float sums, or double sums for 16-bit results");
  constexpr int K = 2 * Radius + 1;
  using Shape = FastTileShape<K>;
  __shared__ Acc tile[Shape::rows][Shape::stride];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int thread_rank = ty * kFastTileW + tx;
  const int row_elems = src.width * channels;
  const int x0 = blockIdx.x * kFastTileW;  // first output element of the tile
  const int y0 = blockIdx.y * kFastTileH;
  const int tile_w = kFastTileW + (K - 1) * channels;
  const int left = x0 - p.anchor_x * channels;  // element of the tile's first column
  const int top = y0 - p.anchor_y;
  // Every load first, then every store: the loads of a thread are independent and in flight together.
  float v[Shape::loads];
#pragma unroll
  for (int n = 0; n < Shape::loads; ++n) {
    const int cell = thread_rank + n * kFastTileThreads;
    const int ly = cell / tile_w;
    const int lx = cell - ly * tile_w;
    v[n] = 0.0f;
    if (ly < Shape::rows) {
      const int e = left + lx;
      const int pixel = floor_div(e, channels);
      v[n] = load_element(src, top + ly, pixel, e - pixel * channels, channels, p);
    }
  }
#pragma unroll
  for (int n = 0; n < Shape::loads; ++n) {
    const int cell = thread_rank + n * kFastTileThreads;
    const int ly = cell / tile_w;
    if (ly < Shape::rows) tile[ly][cell - ly * tile_w] = v[n];
  }
  __syncthreads();
  static_assert(Rows == 1 || Rows == 2, "one or two output rows a thread");
  if (ty * Rows >= kFastTileH) return;  // Rows 2: the upper four warps only load
  const int e = x0 + tx;
  const int y = y0 + ty * Rows;  // the thread's first output row
  if (e >= row_elems) return;
  const int ly = ty * Rows;  // its first tile row
  Acc acc[Rows];
  if (keep_alpha && e % channels == 3) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) acc[r] = tile[ly + r + p.anchor_y][tx + p.anchor_x * channels];  // the input element
  } else {
#pragma unroll
    for (int r = 0; r < Rows; ++r) acc[r] = taps.delta;
      // Tile row ly + i feeds filter row i - r of output row r: each output still sums its taps in
      // filter row-major order from delta.
#pragma unroll
    for (int i = 0; i < K + Rows - 1; ++i)
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const Acc t = tile[ly + i][tx + j * channels];
#pragma unroll
        for (int r = 0; r < Rows; ++r)
          if (i - r >= 0 && i - r < K) acc[r] = fma_of(taps.w[(i - r) * K + j], t, acc[r]);
      }
  }
#pragma unroll
  for (int r = 0; r < Rows; ++r)
    if (y + r < src.height) {
      if constexpr (std::is_same_v<Acc, double>) {
        dst.row(y + r)[e] = round_clamp_double<Out>(acc[r]);
      } else {
        dst.row(y + r)[e] = saturate_from_float<Out>(acc[r]);
      }
    }
}

}  // namespace cuconv::kernels
