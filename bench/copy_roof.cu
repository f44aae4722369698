// SPDX-License-Identifier: Apache-2.0
// The bandwidth roof of the benchmark: the fastest of cudaMemcpyAsync and a 16-byte-per-thread
// grid-stride copy kernel over the same bytes. (cudaMemcpy2D between pitched planes reached
// only about half of the bandwidth a plain copy kernel gets, so it would flatter the kernels.)
#include "copy_roof.hpp"

#include "gpu/cuda_check.hpp"

namespace {
constexpr int kCopyThreads = 256;

/// Thread i copies 16-byte words i, i + gridDim.x * 256, ...
__global__ void __launch_bounds__(kCopyThreads)
    copy_words(const int4* __restrict__ in, int4* __restrict__ out, std::size_t words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kCopyThreads;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * kCopyThreads + threadIdx.x; i < words; i += stride)
    out[i] = in[i];
}
}  // namespace

void launch_copy_kernel(const void* in, void* out, std::size_t bytes, cudaStream_t stream) {
  int device = 0, sms = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t words = bytes / sizeof(int4);  // allocations are 512-byte aligned and sized
  copy_words<<<sms * 8, kCopyThreads, 0, stream>>>(static_cast<const int4*>(in), static_cast<int4*>(out), words);
  CUCONV_CHECK_LAUNCH();
}
