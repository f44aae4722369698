// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file constmem.cuh
/// `constmem` (PMPP Fig. 7.9): `basic` with the weights in __constant__ memory.
#include "common.cuh"
#include "constant_filter.cuh"

namespace cuconv::kernels {

inline constexpr int kConstmemBlockX = 32;
inline constexpr int kConstmemBlockY = 8;
inline constexpr int kConstmemThreads = kConstmemBlockX * kConstmemBlockY;

/// Thread (tx, ty) of block (bx, by) computes output pixel (bx * 32 + tx, tile_row * 8 + ty),
/// tile_row = by, by + gridDim.y, ...; inputs from global memory, weights from constant memory.
/// @tparam Radius filter radius when the filter is (2R+1)^2 (loops unrolled), or kRuntimeRadius
template <class In, class Out, int Radius>
__global__ void __launch_bounds__(kConstmemThreads)
    constmem_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p) {
  const int kw = filter_cols<Radius>(p);
  const int kh = filter_rows<Radius>(p);
  const int x = blockIdx.x * kConstmemBlockX + threadIdx.x;
  const int tile_rows = div_up(dst.height, kConstmemBlockY);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y = tile_row * kConstmemBlockY + threadIdx.y;
    if (x >= dst.width || y >= dst.height) continue;
    float acc = p.delta;
    if (window_inside(x, y, kw, kh, src.width, src.height, p)) {
      // Interior: straight reads, fully unrolled for listed radii.
#pragma unroll
      for (int i = 0; i < kh; ++i) {
        const In* in_row = src.row(y - p.anchor_y + i) + (x - p.anchor_x);
#pragma unroll
        for (int j = 0; j < kw; ++j)
          acc = fmaf(c_filter_weights[i * kw + j], static_cast<float>(__ldg(in_row + j)), acc);
      }
    } else {
      // Near the border: every read through the border rule; kept rolled so the code stays small.
#pragma unroll 1
      for (int i = 0; i < kh; ++i) {
#pragma unroll 1
        for (int j = 0; j < kw; ++j) {
          acc = fmaf(c_filter_weights[i * kw + j], load_pixel(src, y - p.anchor_y + i, x - p.anchor_x + j, p), acc);
        }
      }
    }
    dst.row(y)[x] = saturate_from_float<Out>(acc);
  }
}

}  // namespace cuconv::kernels
