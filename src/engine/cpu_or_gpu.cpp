// SPDX-License-Identifier: Apache-2.0
// The CPU-or-GPU prediction of `auto` without a warm GPU (cpu_or_gpu.hpp).
#include "engine/cpu_or_gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace cuconv::engine {

std::string CpuOrGpu::reason() const {
  return cpu_faster() ? fmt::format(
                            "auto: the CPU (about {:.0f} ms) is faster here than the GPU's start-up and "
                            "copies (about {:.0f} ms)",
                            cpu_ms, gpu_ms)
                      : fmt::format(
                            "auto: the GPU (about {:.0f} ms with its start-up) is faster here than the CPU "
                            "(about {:.0f} ms)",
                            gpu_ms, cpu_ms);
}

CpuOrGpu predict_cpu_or_gpu(const Filter& filter, int width, int height, int channels, int bytes_per_value,
                            unsigned cpu_threads, const CpuOrGpuCosts& costs) {
  if (cpu_threads == 0) cpu_threads = std::max(1U, std::thread::hardware_concurrency());
  cpu_threads = std::min(cpu_threads, std::max(1U, costs.cpu_effective_threads));
  const double values = static_cast<double>(width) * height * channels;
  const int taps = filter.width * filter.height;
  const double ns_per_value = taps < costs.dft_from_taps ? costs.cpu_ns_per_tap * taps : costs.cpu_dft_ns_per_value;
  CpuOrGpu p;
  p.cpu_ms = values * ns_per_value * 1e-6 / cpu_threads;
  p.gpu_ms = costs.gpu_startup_ms + 2.0 * values * bytes_per_value / costs.gpu_copy_bytes_per_ms;
  return p;
}

}  // namespace cuconv::engine
