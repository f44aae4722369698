// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file cached.cuh
/// `cached` (PMPP Fig. 7.15): the block is the output tile and shared memory holds only the
/// input pixels under it; halo pixels are read from global memory, where neighbouring blocks
/// have usually brought them into L1/L2 already. Shared memory does not grow with the filter,
/// so every filter size runs.
#include "common.cuh"
#include "constant_filter.cuh"

namespace cuconv::kernels {

inline constexpr int kCachedTileW = 32;
inline constexpr int kCachedTileH = 16;
inline constexpr int kCachedThreads = kCachedTileW * kCachedTileH;

/// Thread (tx, ty) of block (bx, tile_row) loads input pixel (bx * 32 + tx, tile_row * 16 + ty)
/// into shared memory and computes the output pixel at the same place.
template <class In, class Out, int Radius>
__global__ void __launch_bounds__(kCachedThreads)
    cached_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p) {
  __shared__ float input_tile[kCachedTileH][kCachedTileW];
  const int kw = filter_cols<Radius>(p);
  const int kh = filter_rows<Radius>(p);
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int x0 = blockIdx.x * kCachedTileW;
  const int x = x0 + tx;
  const int tile_rows = div_up(dst.height, kCachedTileH);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y0 = tile_row * kCachedTileH;
    const int y = y0 + ty;
    const bool inside = x < dst.width && y < dst.height;
    if (inside) input_tile[ty][tx] = static_cast<float>(__ldg(src.row(y) + x));
    __syncthreads();
    if (inside) {
      float acc = p.delta;
      if (window_inside(x, y, kw, kh, src.width, src.height, p)) {
        // Interior: tile cells from shared memory, the halo straight from global memory (L1).
#pragma unroll
        for (int i = 0; i < kh; ++i) {
          const int ly = ty - p.anchor_y + i;  // row within the tile (may be outside it)
          const In* in_row = src.row(y0 + ly) + x0;
#pragma unroll
          for (int j = 0; j < kw; ++j) {
            const int lx = tx - p.anchor_x + j;
            const bool in_tile = ly >= 0 && ly < kCachedTileH && lx >= 0 && lx < kCachedTileW;
            const float v = in_tile ? input_tile[ly][lx] : static_cast<float>(__ldg(in_row + lx));
            acc = fmaf(c_filter_weights[i * kw + j], v, acc);
          }
        }
      } else {
        // Near the border: the tile where it lies over the image, else the border rule.
#pragma unroll 1
        for (int i = 0; i < kh; ++i) {
          const int ly = ty - p.anchor_y + i;
#pragma unroll 1
          for (int j = 0; j < kw; ++j) {
            const int lx = tx - p.anchor_x + j;
            const bool in_tile = ly >= 0 && ly < kCachedTileH && lx >= 0 && lx < kCachedTileW && y0 + ly < src.height &&
                                 x0 + lx < src.width;
            const float v = in_tile ? input_tile[ly][lx] : load_pixel(src, y0 + ly, x0 + lx, p);
            acc = fmaf(c_filter_weights[i * kw + j], v, acc);
          }
        }
      }
      dst.row(y)[x] = saturate_from_float<Out>(acc);
    }
    __syncthreads();  // the next tile row overwrites the tile
  }
}

}  // namespace cuconv::kernels
