// SPDX-License-Identifier: Apache-2.0
// Launcher of the weights store (kernels/weights.cuh): a filter's weights into device memory on a
// stream, one launch per 1000 weights.
#include "gpu/launch/dispatch.cuh"

#include <kernels/weights.cuh>

#include <algorithm>

namespace cuconv::gpu {

void launch_store_weights(float* device, const float* host, std::size_t count, cudaStream_t stream) {
  for (std::size_t first = 0; first < count; first += kernels::kWeightsPerChunk) {
    kernels::WeightsChunk chunk;
    chunk.count = static_cast<int>(std::min<std::size_t>(count - first, kernels::kWeightsPerChunk));
    std::copy_n(host + first, chunk.count, chunk.values);
    kernels::store_weights_kernel<<<1, kernels::kWeightsBlock, 0, stream>>>(chunk, device + first);
    CUCONV_CHECK_LAUNCH();
  }
}

}  // namespace cuconv::gpu
