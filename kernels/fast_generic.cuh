// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_generic.cuh
/// `fast` for the filters fast_kernel has no compiled instance of (other sizes, off-centre
/// anchors, mixed pixel types): one thread per output element, weights from global memory.
#include "common.cuh"

namespace cuconv::kernels {

inline constexpr int kFastGenericBlockX = 32;
inline constexpr int kFastGenericBlockY = 8;
inline constexpr int kFastGenericThreads = kFastGenericBlockX * kFastGenericBlockY;

/// Any filter size and anchor on interleaved rows: thread (tx, ty) of block (bx, by) computes
/// element bx * 32 + tx of row by' * 8 + ty (by' = by, by + gridDim.y, ...); weights from global
/// memory (one broadcast load per tap for the whole warp).
template <class In, class Out>
__global__ void __launch_bounds__(kFastGenericThreads)
    fast_generic_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, int channels,
                        const float* __restrict__ weights, bool keep_alpha) {
  const int row_elems = src.width * channels;
  const int e = blockIdx.x * kFastGenericBlockX + threadIdx.x;
  if (e >= row_elems) return;
  const int channel = e % channels;
  const int x = e / channels;
  const int tile_rows = div_up(src.height, kFastGenericBlockY);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y = tile_row * kFastGenericBlockY + threadIdx.y;
    if (y >= src.height) continue;
    float acc = p.delta;
    if (keep_alpha && channel == 3) {
      acc = static_cast<float>(src.row(y)[e]);
    } else if (window_inside(x, y, p.kw, p.kh, src.width, src.height, p)) {
      for (int i = 0; i < p.kh; ++i) {
        const In* in = src.row(y - p.anchor_y + i) + (x - p.anchor_x) * channels + channel;
        for (int j = 0; j < p.kw; ++j)
          acc = fmaf(__ldg(weights + i * p.kw + j), static_cast<float>(in[j * channels]), acc);
      }
    } else {
      for (int i = 0; i < p.kh; ++i) {
        const int yy = interpolate_border(y - p.anchor_y + i, src.height, p.border);
        for (int j = 0; j < p.kw; ++j) {
          const int xx = interpolate_border(x - p.anchor_x + j, src.width, p.border);
          const float v = mapped_element<In, InputLoad::plain>(src, yy, xx, channel, channels, p);
          acc = fmaf(__ldg(weights + i * p.kw + j), v, acc);
        }
      }
    }
    dst.row(y)[e] = saturate_from_float<Out>(acc);
  }
}

}  // namespace cuconv::kernels
