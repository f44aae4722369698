// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file weights.cuh
/// Writes filter weights that arrive as a kernel argument into device memory. The driver copies a
/// launch's arguments when the launch is queued, so weights reach the device in stream order
/// without a host buffer that must outlive the call and without the host waiting (a copy from
/// pageable memory may wait for the stream; one from pinned memory needs a buffer kept alive).

namespace cuconv::kernels {

/// Weights one launch carries: 1000 floats keep the argument block within the 4 KiB every CUDA
/// version and device accepts.
inline constexpr int kWeightsPerChunk = 1000;
inline constexpr int kWeightsBlock = 256;

struct WeightsChunk {
  float values[kWeightsPerChunk];
  int count;  ///< values used, at most kWeightsPerChunk
};

/// Thread t of the one block writes values t, t + 256, ... of `chunk` to `target`.
__global__ void __launch_bounds__(kWeightsBlock) store_weights_kernel(WeightsChunk chunk, float* target) {
  for (int i = static_cast<int>(threadIdx.x); i < chunk.count; i += kWeightsBlock) target[i] = chunk.values[i];
}

}  // namespace cuconv::kernels
