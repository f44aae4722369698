// SPDX-License-Identifier: Apache-2.0
// The device queries: whether a usable device exists and why not, the CUDA versions, the GPUs
// (--list-devices), and device selection for callers that spread work over several GPUs.
#include "gpu/device_select.hpp"

#include "common/library_loads.hpp"
#include "gpu/cuda_check.hpp"

#include <cuconv/convolve.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cuconv {

namespace {

/// "12.4" from CUDA's 12040.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

/// Why cudaGetDeviceCount failed, in words a user can act on: no driver at all is the common
/// case on a machine without an NVIDIA GPU, where the runtime only says the driver is
/// "insufficient".
std::string no_device_reason(cudaError_t status) {
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);  // 0 when no NVIDIA driver is installed or loaded
  cudaRuntimeGetVersion(&runtime);
  if (driver == 0) return "no NVIDIA driver is loaded; nvidia-smi tells whether one is installed";
  if (status == cudaErrorInsufficientDriver) {
    return "the NVIDIA driver supports CUDA " + cuda_version_text(driver) + ", older than this build's runtime " +
           cuda_version_text(runtime) + ": update the driver";
  }
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

}  // namespace

bool cuda_device_available(std::string* reason) {
  int count = 0;
  // The process's first call loads libcuda and starts the driver (cuInit): timed as a library
  // load, for -v's account (common/library_loads.hpp).
  static std::atomic<bool> asked{false};
  std::optional<common::TimedLoad> first;
  if (!asked.exchange(true)) first.emplace("CUDA driver");
  const cudaError_t status = cudaGetDeviceCount(&count);
  first.reset();
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (reason != nullptr) *reason = no_device_reason(status);
    return false;
  }
  if (count == 0) {
    if (reason != nullptr) *reason = "no CUDA device found";
    return false;
  }
  return true;
}

std::string cuda_versions() {
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  return "CUDA runtime " + cuda_version_text(runtime) +
         (driver == 0 ? std::string(", no NVIDIA driver") : ", driver supports CUDA " + cuda_version_text(driver));
}

std::vector<std::string> describe_gpus(std::string* reason) {
  std::vector<std::string> gpus;
  if (!cuda_device_available(reason)) return gpus;
  int count = 0;
  cudaGetDeviceCount(&count);
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
      cudaGetLastError();
      gpus.push_back(std::to_string(device) + ": (properties unavailable)");
      continue;
    }
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1u << 30));
    gpus.push_back(std::to_string(device) + ": " + prop.name + ", compute capability " + std::to_string(prop.major) +
                   "." + std::to_string(prop.minor) + ", " + memory);
  }
  return gpus;
}

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
