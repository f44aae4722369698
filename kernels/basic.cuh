// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file basic.cuh
/// `basic` (PMPP Fig. 7.7): one thread per output pixel, every weight and every input pixel read
/// from global memory. The baseline the other variants are measured against.
#include "common.cuh"

namespace cuconv::kernels {

inline constexpr int kBasicBlockX = 32;  ///< a warp spans 32 consecutive output columns
inline constexpr int kBasicBlockY = 8;
inline constexpr int kBasicThreads = kBasicBlockX * kBasicBlockY;

/// Thread (tx, ty) of block (bx, by) computes output pixel (bx * 32 + tx, tile_row * 8 + ty) for
/// tile_row = by, by + gridDim.y, ... (tall images exceed gridDim.y's limit).
/// @tparam In  input pixel type (uint8_t, uint16_t, float)
/// @tparam Out output pixel type (rounded and saturated like cv::saturate_cast)
/// @param weights kh x kw row-major weights in global memory
template <class In, class Out>
__global__ void __launch_bounds__(kBasicThreads)
    basic_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, const float* __restrict__ weights) {
  const int x = blockIdx.x * kBasicBlockX + threadIdx.x;
  const int tile_rows = div_up(dst.height, kBasicBlockY);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y = tile_row * kBasicBlockY + threadIdx.y;
    if (x >= dst.width || y >= dst.height) continue;
    float acc = p.delta;
    for (int i = 0; i < p.kh; ++i) {
      for (int j = 0; j < p.kw; ++j) {
        acc = fmaf(weights[i * p.kw + j], load_pixel(src, y - p.anchor_y + i, x - p.anchor_x + j, p), acc);
      }
    }
    dst.row(y)[x] = saturate_from_float<Out>(acc);
  }
}

}  // namespace cuconv::kernels
