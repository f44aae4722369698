// SPDX-License-Identifier: Apache-2.0
// Device selection for callers that spread work over several GPUs (batch mode, --devices).
#include "gpu/device_select.hpp"

#include "gpu/cuda_check.hpp"

#include <cuconv/convolve.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <mutex>
#include <optional>
#include <string>

namespace cuconv {

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for a query
    return 0;
  }
  return count;
}

namespace gpu {

void select_device(int device) { CUCONV_CUDA_TRY(cudaSetDevice(device)); }

tuning::GpuKind current_gpu_kind() {
  struct Known {
    int major = 0;
    int minor = 0;
    std::string product;
  };
  static std::mutex mutex;
  static std::array<std::optional<Known>, 64> known;  // by device index; set once, never changed
  if (cuda_device_count() == 0) return {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();  // a query: no kind is the answer
    return {};
  }
  const auto slot = static_cast<std::size_t>(device);
  const std::lock_guard lock(mutex);
  if (slot < known.size() && known[slot]) return {known[slot]->major, known[slot]->minor, known[slot]->product};
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  if (slot >= known.size()) return {properties.major, properties.minor, {}};  // no name kept past 64 devices
  known[slot] = Known{properties.major, properties.minor, properties.name};
  return {known[slot]->major, known[slot]->minor, known[slot]->product};
}

}  // namespace gpu
}  // namespace cuconv
