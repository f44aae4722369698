// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file channels.cuh
/// Moves one channel between pitched images of interleaved channels, converted as
/// cv::saturate_cast does. The GPU path uses it to split an interleaved image into the
/// one-channel planes the PMPP variants filter, to merge their results back, and to pass alpha
/// through (--alpha keep), so every variant reads and writes the same device image.
#include "common.cuh"

namespace cuconv::kernels {

inline constexpr int kChannelBlockX = 32;
inline constexpr int kChannelBlockY = 8;

/// Thread (tx, ty) of block (bx, by) moves pixel (bx * 32 + tx, by' * 8 + ty), by' = by,
/// by + gridDim.y, ...: channel `from_channel` of `src` (`from_channels` per pixel) to channel
/// `to_channel` of `dst` (`to_channels` per pixel). The views' widths are in pixels.
template <class From, class To>
__global__ void __launch_bounds__(kChannelBlockX* kChannelBlockY)
    copy_channel_kernel(PlaneView<const From> src, int from_channels, int from_channel, PlaneView<To> dst,
                        int to_channels, int to_channel) {
  const int x = blockIdx.x * kChannelBlockX + threadIdx.x;
  if (x >= src.width) return;
  const int tile_rows = div_up(src.height, kChannelBlockY);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y = tile_row * kChannelBlockY + threadIdx.y;
    if (y >= src.height) continue;
    const From value = src.row(y)[static_cast<long long>(x) * from_channels + from_channel];
    To& target = dst.row(y)[static_cast<long long>(x) * to_channels + to_channel];
    if constexpr (std::is_same_v<From, To>) {
      target = value;
    } else {
      target = saturate_from_float<To>(static_cast<float>(value));
    }
  }
}

}  // namespace cuconv::kernels
