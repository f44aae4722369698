// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_wide_mma.cuh
/// `fast`'s double-precision rank-1 sums over one-channel 16-bit images on the FP64 tensor cores
/// (DMMA, mma.sync m8n8k4 f64, compute capability 8.0 and up): the same row-then-column sums in
/// double as kernels/fast_wide.cuh in another order, under one bound (wide_error_bound counts the
/// MMAs' roundings as if each product and addition rounded), at twice the FP64 rate of the FMA
/// units and with no shared loads in the column pass.
///
/// Thread-to-data mapping: a block of kWideMmaWarps warps owns 8 N columns a warp (N tiles of 8
/// columns side by side) and walks a strip of rows 8 at a time. Per step the block stages 8 input
/// rows (its columns and the K - 1 + padding the taps reach) as doubles in one of two shared
/// buffers; each warp forms the row sums of those 8 rows for each of its tiles as
/// R^T (8 columns x 8 rows) = Htoe^T (8 x k) * X^T (k x 8), the horizontal weights' Toeplitz
/// band as the A operand (registers, fixed) and the staged pixels as B. The D fragment of R^T
/// (lane l: column l / 4, rows 2 (l % 4) + e) is already the A fragment of the column pass when
/// its k index runs over the rows in the order 2q + e: each output tile of 8 rows is
/// out^T = R^T (over the T row-sum tiles it reads) * Vtoe^T, two k-steps a row-sum tile, with
/// the vertical weights as B (registers, fixed). The last T row-sum tiles stay in registers as a
/// ring whose slots the T-step unrolled walk names at compile time. A lane's outputs are rows
/// 2 (l % 4) + e of its tile's column l / 4.
#include "common.cuh"
#include "fast_wide.cuh"

#include <cstdint>

namespace cuconv::kernels {

inline constexpr int kWideMmaWarps = 4;
inline constexpr int kWideMmaTileRows = 8;  ///< rows of a step; strips are whole steps

/// 8-row tiles of row sums an output tile of 8 rows reads: ceil((K + 7) / 8).
__host__ __device__ constexpr int wide_mma_row_tiles(int k) { return (k + 14) / 8; }
/// Rows a strip reads before its first output: the tiles of row sums before its first output tile.
__host__ __device__ constexpr int wide_mma_warmup_rows(int k) { return kWideMmaTileRows * (wide_mma_row_tiles(k) - 1); }
/// k-steps of 4 columns in the row pass of an 8-column tile: ceil((K + 7) / 4).
__host__ __device__ constexpr int wide_mma_row_steps(int k) { return (k + 10) / 4; }
/// Tiles of 8 columns a warp: fewer past 23 taps, where the ring of row sums grows.
__host__ __device__ constexpr int wide_mma_tiles(int k) { return k <= 23 ? 4 : 2; }
/// Output columns of a block.
__host__ __device__ constexpr int wide_mma_block_columns(int k) { return 8 * kWideMmaWarps * wide_mma_tiles(k); }
/// Staged columns: the last tile's k-steps reach 4 * row_steps - 8 past the block.
__host__ __device__ constexpr int wide_mma_staged_columns(int k) {
  return wide_mma_block_columns(k) - 8 + 4 * wide_mma_row_steps(k);
}
/// Row stride of the staged doubles: 4 mod 16, so a k-step's 8 rows x 4 columns fall on
/// distinct banks in each half warp.
__host__ __device__ constexpr int wide_mma_stride(int k) { return (wide_mma_staged_columns(k) + 11) / 16 * 16 + 4; }

/// D += A B for one m8n8k4 FP64 MMA: a lane gives one element of A and of B and holds two of D.
__device__ __forceinline__ void dmma_m8n8k4(double (&d)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a), "d"(b));
#else
  __trap();  // launched only where device_has_mma()
#endif
}

template <int K>
__global__ void __launch_bounds__(32 * kWideMmaWarps)
    fast_wide_mma_kernel(PlaneView<const std::uint16_t> src, PlaneView<std::uint16_t> dst, ConvParams p,
                         WideTaps<K> taps, int strip_rows) {
  constexpr int kThreads = 32 * kWideMmaWarps;
  constexpr int T = wide_mma_row_tiles(K);
  constexpr int kSteps = wide_mma_row_steps(K);
  constexpr int N = wide_mma_tiles(K);
  constexpr int kColumns = wide_mma_block_columns(K);
  constexpr int kStaged = wide_mma_staged_columns(K);
  constexpr int kStride = wide_mma_stride(K);
  constexpr int kPerThread = div_up(kStaged, kThreads);  // staged columns a thread loads
  __shared__ double staged[2][8 * kStride];

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int q4 = lane & 3;
  const int g8 = lane >> 2;
  const int x0 = static_cast<int>(blockIdx.x) * kColumns;

  // Fixed operands: the horizontal band as A of the row pass (lane: row g8, k column q4), the
  // vertical band as B of the column pass (lane: k row q4 of step (t, e) = input row 8t + 2 q4 + e,
  // output row g8). Past K (and past kw, kh: zero weights) the band is zero.
  double h_band[kSteps];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int j = 4 * s + q4 - g8;
    h_band[s] = j >= 0 && j < K ? taps.horizontal[j] : 0.0;
  }
  double v_band[T][2];
#pragma unroll
  for (int t = 0; t < T; ++t)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int i = 8 * t + 2 * q4 + e - g8;
      v_band[t][e] = i >= 0 && i < K ? taps.vertical[i] : 0.0;
    }

  // Where this thread's staged columns come from, the same in every row: found once. -1 is the
  // constant border, -2 a column no thread stages.
  int position[kPerThread];
#pragma unroll
  for (int q = 0; q < kPerThread; ++q) {
    const int c = tid + q * kThreads;
    const int g = x0 - p.anchor_x + c;
    if (c >= kStaged) {
      position[q] = -2;
    } else if (g >= 0 && g < src.width) {
      position[q] = g;
    } else {
      position[q] = interpolate_border(g, src.width, p.border);
    }
  }
  const auto constant = static_cast<std::uint16_t>(p.border_value);  // saturated to 16 bits already: exact
  std::uint16_t pending[8][kPerThread];
  const auto load_rows = [&](int r0) {
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      const int yy = interpolate_border(r0 + r, src.height, p.border);
#pragma unroll
      for (int q = 0; q < kPerThread; ++q)
        pending[r][q] = position[q] == -2             ? std::uint16_t{}
                        : (yy < 0 || position[q] < 0) ? constant
                                                      : __ldg(src.row(yy) + position[q]);
    }
  };
  const int strips = div_up(src.height, strip_rows);
  const int tile_x = 8 * N * warp;  // staged column of this warp's first tile

  for (int strip = static_cast<int>(blockIdx.y); strip < strips; strip += static_cast<int>(gridDim.y)) {
    const int y0 = strip * strip_rows;
    const int y_end = min(y0 + strip_rows, src.height);
    const int steps = div_up(y_end - y0, 8) + T - 1;  // input tiles: T - 1 of warm-up, then one output tile each
    const int r_first = y0 - p.anchor_y;
    double ring[T][N][2];  // row sums of the last T input tiles (D fragments of R^T)
    load_rows(r_first);
    for (int base = 0; base < steps; base += T) {
#pragma unroll
      for (int u = 0; u < T; ++u) {
        const int n = base + u;  // input tile n: rows r_first + 8n .. + 7
        if (n >= steps) break;   // the same for the whole block
        double* rows = staged[n & 1];
#pragma unroll
        for (int r = 0; r < 8; ++r)
#pragma unroll
          for (int q = 0; q < kPerThread; ++q)
            if (position[q] != -2) rows[r * kStride + tid + q * kThreads] = static_cast<double>(pending[r][q]);
        __syncthreads();
        if (n + 1 < steps) load_rows(r_first + 8 * (n + 1));  // in flight while this tile is summed
#pragma unroll
        for (int i = 0; i < N; ++i) {  // tile i's row sums of input tile n into ring slot u
          double d[2] = {0.0, 0.0};
          const double* b = rows + g8 * kStride + tile_x + 8 * i + q4;
#pragma unroll
          for (int s = 0; s < kSteps; ++s) dmma_m8n8k4(d, h_band[s], b[4 * s]);
          ring[u][i][0] = d[0];
          ring[u][i][1] = d[1];
        }
        // Output tile n - (T - 1): row-sum tiles n - T + 1 .. n, in slots (u + 1 + t) mod T.
        if (n >= T - 1) {
          const int y = y0 + 8 * (n - (T - 1)) + 2 * q4;
#pragma unroll
          for (int i = 0; i < N; ++i) {
            double d[2] = {taps.delta, taps.delta};
#pragma unroll
            for (int t = 0; t < T; ++t)
#pragma unroll
              for (int e = 0; e < 2; ++e) dmma_m8n8k4(d, ring[(u + 1 + t) % T][i][e], v_band[t][e]);
            const int x = x0 + tile_x + 8 * i + g8;
            if (x < src.width) {
              if (y < y_end) dst.row(y)[x] = round_clamp_double<std::uint16_t>(d[0]);
              if (y + 1 < y_end) dst.row(y + 1)[x] = round_clamp_double<std::uint16_t>(d[1]);
            }
          }
        }
      }
    }
    __syncthreads();  // the next strip's first tile goes into a buffer this strip's last tile may be read from
  }
}

}  // namespace cuconv::kernels
