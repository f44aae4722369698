// SPDX-License-Identifier: Apache-2.0
// mma.sync m16n8k16 (FP16 in, FP32 accumulation) on one problem a warp: see mma_probe.hpp.
#include "mma_probe.hpp"

#include "gpu/cuda_check.hpp"
#include "gpu/memory/device_memory.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

namespace cuconv::test {
namespace {

/// Warp w multiplies problem w; lane 4g + t loads and stores its fragments in PTX's layout.
__global__ void mma_probe_kernel(const std::uint16_t* a, const std::uint16_t* b, const float* c, float* d, int count) {
  const int w = static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
  if (w >= count) return;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const std::uint16_t* pa = a + 256 * w;
  const std::uint16_t* pb = b + 128 * w;
  unsigned ra[4];
  unsigned rb[2];
  float acc[4];
  for (int r = 0; r < 4; ++r) {
    const int m = g + 8 * (r & 1);
    const int k = 2 * t + 8 * (r >> 1);
    ra[r] = pa[16 * m + k] | (static_cast<unsigned>(pa[16 * m + k + 1]) << 16);
  }
  for (int h = 0; h < 2; ++h) {
    const int k = 2 * t + 8 * h;
    rb[h] = pb[16 * g + k] | (static_cast<unsigned>(pb[16 * g + k + 1]) << 16);
  }
  for (int e = 0; e < 4; ++e) acc[e] = c[128 * w + 8 * (g + 8 * (e >> 1)) + 2 * t + (e & 1)];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
#else
  __trap();
#endif
  for (int e = 0; e < 4; ++e) d[128 * w + 8 * (g + 8 * (e >> 1)) + 2 * t + (e & 1)] = acc[e];
}

/// A device copy of `host`.
template <class T>
gpu::DeviceBuffer device_copy(const std::vector<T>& host) {
  gpu::DeviceBuffer buffer(host.size() * sizeof(T));
  CUCONV_CUDA_TRY(cudaMemcpy(buffer.data(), host.data(), buffer.size(), cudaMemcpyHostToDevice));
  return buffer;
}

}  // namespace

std::vector<float> mma_f16_f32_on_device(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                                         const std::vector<float>& c, int count) {
  const auto n = static_cast<std::size_t>(count);
  if (a.size() != 256 * n || b.size() != 128 * n || c.size() != 128 * n) throw std::invalid_argument("mma probe sizes");
  const gpu::DeviceBuffer da = device_copy(a);
  const gpu::DeviceBuffer db = device_copy(b);
  const gpu::DeviceBuffer dc = device_copy(c);
  const gpu::DeviceBuffer dd(128 * n * sizeof(float));
  mma_probe_kernel<<<(count + 3) / 4, 128>>>(
      static_cast<const std::uint16_t*>(da.data()), static_cast<const std::uint16_t*>(db.data()),
      static_cast<const float*>(dc.data()), static_cast<float*>(dd.data()), count);
  CUCONV_CHECK_LAUNCH();
  std::vector<float> d(128 * n);
  CUCONV_CUDA_TRY(cudaMemcpy(d.data(), dd.data(), d.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return d;
}

}  // namespace cuconv::test
