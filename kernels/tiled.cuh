// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tiled.cuh
/// `tiled` (PMPP Fig. 7.12): the block is the input tile. Every thread loads input pixels into
/// shared memory; only the threads over the output tile (the input tile minus the halo) compute.
///
/// The seed fixes the input tile at 32 x 32 threads, which leaves no output for filters of 32
/// or more and few outputs for large ones. Here the 32 x 32 threads cover an input tile of
/// (32 * coarsen)^2 pixels, each thread owning coarsen^2 of them at stride 32, so filters up to
/// kMaxFilterSide keep a non-empty output tile (coarsen is picked on the host: 1, 2 or 4).
#include "common.cuh"
#include "constant_filter.cuh"

namespace cuconv::kernels {

inline constexpr int kTiledBlockSide = 32;
inline constexpr int kTiledThreads = kTiledBlockSide * kTiledBlockSide;

/// Input/output tile geometry, chosen by the host for the filter size.
struct TiledGeometry {
  int coarsen;  ///< input pixels per thread along each axis
  int in_side;  ///< input tile side = kTiledBlockSide * coarsen (shared-memory tile is in_side^2)
  int out_w;    ///< output tile = input tile minus the halo: in_side - kw + 1
  int out_h;    ///< in_side - kh + 1
};

/// Tile mapping: block (bx, tile_row) owns output columns [bx * out_w, +out_w) and rows
/// [tile_row * out_h, +out_h); its input tile starts anchor pixels up and left of that.
/// Thread (tx, ty) loads input tile cells (ty + 32 cy, tx + 32 cx) for cy, cx < coarsen, and
/// computes the output under each cell that lies inside the output tile.
template <class In, class Out, int Radius>
__global__ void __launch_bounds__(kTiledThreads)
    tiled_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, TiledGeometry g) {
  extern __shared__ float input_tile[];  // g.in_side x g.in_side, row-major
  const int kw = filter_cols<Radius>(p);
  const int kh = filter_rows<Radius>(p);
  const int x0 = blockIdx.x * g.out_w;
  const int tile_rows = div_up(dst.height, g.out_h);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y0 = tile_row * g.out_h;
    for (int cy = 0; cy < g.coarsen; ++cy) {
      for (int cx = 0; cx < g.coarsen; ++cx) {
        const int ly = threadIdx.y + cy * kTiledBlockSide;
        const int lx = threadIdx.x + cx * kTiledBlockSide;
        input_tile[ly * g.in_side + lx] = load_pixel(src, y0 - p.anchor_y + ly, x0 - p.anchor_x + lx, p);
      }
    }
    __syncthreads();
    for (int cy = 0; cy < g.coarsen; ++cy) {
      for (int cx = 0; cx < g.coarsen; ++cx) {
        // The cell's position in the output tile; halo cells were only loaded.
        const int oy = threadIdx.y + cy * kTiledBlockSide - p.anchor_y;
        const int ox = threadIdx.x + cx * kTiledBlockSide - p.anchor_x;
        if (ox < 0 || ox >= g.out_w || oy < 0 || oy >= g.out_h) continue;
        if (x0 + ox >= dst.width || y0 + oy >= dst.height) continue;
        float acc = p.delta;
#pragma unroll
        for (int i = 0; i < kh; ++i) {
          const float* tile_row_ptr = input_tile + (oy + i) * g.in_side + ox;
#pragma unroll
          for (int j = 0; j < kw; ++j) acc = fmaf(c_filter_weights[i * kw + j], tile_row_ptr[j], acc);
        }
        dst.row(y0 + oy)[x0 + ox] = saturate_from_float<Out>(acc);
      }
    }
    __syncthreads();  // the next tile row overwrites the tile
  }
}

}  // namespace cuconv::kernels
