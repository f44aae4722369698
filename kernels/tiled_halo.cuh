// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tiled_halo.cuh
/// `tiled-halo` (PMPP section 7.4, second strategy): the block is the output tile. Each thread
/// loads the input pixel under its own output pixel, then the block loads the halo around the
/// tile cooperatively, so no thread idles during the computation.
#include "common.cuh"
#include "constant_filter.cuh"

namespace cuconv::kernels {

inline constexpr int kHaloTileW = 32;  ///< a warp spans one tile row: coalesced loads and stores
inline constexpr int kHaloTileH = 16;
inline constexpr int kHaloThreads = kHaloTileW * kHaloTileH;

/// Shared-memory bytes for a kh x kw filter: the (16 + kh - 1) x (32 + kw - 1) input tile.
__host__ __device__ constexpr std::size_t tiled_halo_shared_bytes(int kw, int kh) {
  return sizeof(float) * static_cast<std::size_t>(kHaloTileW + kw - 1) * static_cast<std::size_t>(kHaloTileH + kh - 1);
}

/// Thread (tx, ty) of block (bx, tile_row) computes output pixel (bx * 32 + tx,
/// tile_row * 16 + ty); tile_row = by, by + gridDim.y, ...
template <class In, class Out, int Radius>
__global__ void __launch_bounds__(kHaloThreads)
    tiled_halo_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p) {
  extern __shared__ float input_tile[];  // tile_h x tile_w, row-major
  const int kw = filter_cols<Radius>(p);
  const int kh = filter_rows<Radius>(p);
  const int tile_w = kHaloTileW + kw - 1;
  const int tile_h = kHaloTileH + kh - 1;
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int thread_rank = ty * kHaloTileW + tx;
  const int x0 = blockIdx.x * kHaloTileW;
  const int tile_rows = div_up(dst.height, kHaloTileH);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y0 = tile_row * kHaloTileH;
    // Centre: the input pixel under this thread's output pixel.
    input_tile[(ty + p.anchor_y) * tile_w + tx + p.anchor_x] = load_pixel(src, y0 + ty, x0 + tx, p);
    // Halo: every other cell of the input tile, strided over the block.
    for (int cell = thread_rank; cell < tile_w * tile_h; cell += kHaloThreads) {
      const int ly = cell / tile_w;
      const int lx = cell - ly * tile_w;
      const bool centre =
          ly >= p.anchor_y && ly < p.anchor_y + kHaloTileH && lx >= p.anchor_x && lx < p.anchor_x + kHaloTileW;
      if (!centre) input_tile[cell] = load_pixel(src, y0 - p.anchor_y + ly, x0 - p.anchor_x + lx, p);
    }
    __syncthreads();
    const int x = x0 + tx;
    const int y = y0 + ty;
    if (x < dst.width && y < dst.height) {
      float acc = p.delta;
#pragma unroll
      for (int i = 0; i < kh; ++i) {
        const float* tile_row_ptr = input_tile + (ty + i) * tile_w + tx;
#pragma unroll
        for (int j = 0; j < kw; ++j) acc = fmaf(c_filter_weights[i * kw + j], tile_row_ptr[j], acc);
      }
      dst.row(y)[x] = saturate_from_float<Out>(acc);
    }
    __syncthreads();  // the next tile row overwrites the tile
  }
}

}  // namespace cuconv::kernels
