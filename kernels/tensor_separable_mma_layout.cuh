// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_separable_mma_layout.cuh
/// The geometry of `tensor`'s both-passes kernel (tensor_separable_mma.cuh): rows a step, 16-row
/// steps of row sums an output step reads, pixel tiles a warp, halos, staged row widths, the
/// output tile's stride, the row-sum history and the block's dynamic shared memory, and the taps
/// it takes as a parameter. Kept apart from the kernel body: the launcher (launch_tensor.cu) sizes
/// its grid and shared memory from the same constants the kernel indexes with.
#include <cuda_runtime.h>

namespace cuconv::kernels {

inline constexpr int kTensorMmaRows = 16;  ///< rows per step (the MMAs' m16 / k16)

/// 16-row steps of row sums an output step reads: 2 up to radius 8 (16 + 2R <= 32 rows), 3 up to 16.
__host__ __device__ constexpr int tensor_mma_vertical_steps(int radius) { return radius <= 8 ? 2 : 3; }

/// Pixel tiles of 16 a warp: one channel four (two from radius 9, where each tile keeps two older
/// steps' row sums in shared memory), else one (three or four channel tiles).
__host__ __device__ constexpr int tensor_mma_pixel_tiles(int channels, int radius) {
  return channels == 1 ? (radius <= 8 ? 4 : 2) : 1;
}

/// Pixels of halo each side of a block's staged rows (R rounded up to 16: whole 16-pixel slots),
/// and the halo each output tile's k-steps start from (R rounded up to 8: ldmatrix rows).
__host__ __device__ constexpr int tensor_mma_halo(int radius) { return (radius + 15) / 16 * 16; }
__host__ __device__ constexpr int tensor_mma_tile_halo(int radius) { return (radius + 7) / 8 * 8; }

/// k-steps of 16 values an output tile of 16 reads: staged pixels tile_halo - R .. 15 + R + tile_halo.
__host__ __device__ constexpr int tensor_mma_ksteps(int radius) {
  return (15 + radius + tensor_mma_tile_halo(radius)) / 16 + 1;
}

/// Output pixels of a row per block, staged pixels and halves of one staged plane row (a pad of 8
/// halves: eight rows' 16-byte ldmatrix reads fall in distinct bank groups).
__host__ __device__ constexpr int tensor_mma_tile_pixels(int warps, int channels, int radius) {
  return 16 * tensor_mma_pixel_tiles(channels, radius) * warps;
}
__host__ __device__ constexpr int tensor_mma_staged_pixels(int warps, int channels, int radius) {
  return (tensor_mma_tile_pixels(warps, channels, radius) + tensor_mma_halo(radius) - tensor_mma_tile_halo(radius) +
          16 * (tensor_mma_ksteps(radius) - 1) + 15) /
         16 * 16;
}
__host__ __device__ constexpr int tensor_mma_stage_stride(int warps, int channels, int radius) {
  return tensor_mma_staged_pixels(warps, channels, radius) + 8;
}

/// Bytes between the rows of a warp's output tile in shared memory: the tile's bytes and 16 or 32
/// more, an odd number of 16-byte units, so the eight rows of a 2-byte store spread over the banks.
__host__ __device__ constexpr int tensor_mma_out_stride(int channels, int radius) {
  return (16 * tensor_mma_pixel_tiles(channels, radius) * channels + 16) / 16 % 2 == 1
             ? 16 * tensor_mma_pixel_tiles(channels, radius) * channels + 16
             : 16 * tensor_mma_pixel_tiles(channels, radius) * channels + 32;
}

/// Where the older steps' row sums wait: the previous step's in registers up to radius 8, two
/// steps' in the warp's shared memory from radius 9 (in registers they would spill).
__host__ __device__ constexpr bool tensor_mma_shared_history(int radius) {
  return tensor_mma_vertical_steps(radius) == 3;
}

/// Bytes of a warp's row-sum history in shared memory: the older steps' B fragments (hi and lo,
/// 16 bytes a lane each) for each of its tiles.
__host__ __device__ constexpr int tensor_mma_history_bytes(int channels, int radius) {
  return tensor_mma_shared_history(radius) ? (tensor_mma_vertical_steps(radius) - 1) *
                                                 tensor_mma_pixel_tiles(channels, radius) * channels * 2 * 32 * 16
                                           : 0;
}

/// Dynamic shared memory of one block: two buffers of C planes of 16 staged FP16 rows, where each
/// staged byte reads from (the border rule at the row's ends), each warp's 16 output rows, and its
/// row-sum history.
__host__ __device__ constexpr int tensor_mma_shared_bytes(int warps, int channels, int radius) {
  return 2 * channels * kTensorMmaRows * tensor_mma_stage_stride(warps, channels, radius) * 2 +
         tensor_mma_staged_pixels(warps, channels, radius) * channels * 4 +
         warps *
             (kTensorMmaRows * tensor_mma_out_stride(channels, radius) + tensor_mma_history_bytes(channels, radius));
}

/// The weights as FP16 bits: horizontal hi * 2^(11 - sigma) and lo * 2^-sigma, vertical V' = v 2^tau
/// as hi + lo; `scale` = 2^(sigma - e - tau) takes the vertical sums to output units. A kernel
/// parameter.
template <int K>
struct TensorSeparableMmaTaps {
  unsigned short bits[4 * K];  ///< horizontal hi, horizontal lo, vertical hi, vertical lo: K each
  float scale;
};

}  // namespace cuconv::kernels
