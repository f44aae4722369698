// SPDX-License-Identifier: Apache-2.0
// The CPU-or-GPU prediction of `auto` without a warm GPU (cpu_or_gpu.hpp).
#include "engine/cpu_or_gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace cuconv::engine {

namespace {

// cv::filter2D on one hardware thread, per value (pixel x channel): a direct sum costs about
// this much per tap; from 11 x 11 taps OpenCV filters through the DFT, whose cost per value does
// not grow with the taps.
constexpr double kCpuNsPerTap = 0.5;
constexpr int kCpuDftFromTaps = 121;
constexpr double kCpuDftNsPerValue = 90.0;
// filter2D's threads speed it up by at most this factor, however many cores there are.
constexpr unsigned kCpuEffectiveThreads = 4;
// Creating the CUDA context and loading the kernels on the GPU nodes, and pageable copies.
constexpr double kGpuStartupMs = 500.0;
constexpr double kGpuCopyBytesPerMs = 10e6;

}  // namespace

std::string CpuOrGpu::reason() const {
  return cpu_faster() ? fmt::format("auto: the CPU (about {:.0f} ms) is faster here than the GPU's start-up and "
                                    "copies (about {:.0f} ms)", cpu_ms, gpu_ms)
                      : fmt::format("auto: the GPU (about {:.0f} ms with its start-up) is faster here than the CPU "
                                    "(about {:.0f} ms)", gpu_ms, cpu_ms);
}

CpuOrGpu predict_cpu_or_gpu(const Filter& filter, int width, int height, int channels, int bytes_per_value,
                            unsigned cpu_threads) {
  if (cpu_threads == 0) cpu_threads = std::max(1U, std::thread::hardware_concurrency());
  cpu_threads = std::min(cpu_threads, kCpuEffectiveThreads);
  const double values = static_cast<double>(width) * height * channels;
  const int taps = filter.width * filter.height;
  const double ns_per_value = taps < kCpuDftFromTaps ? kCpuNsPerTap * taps : kCpuDftNsPerValue;
  CpuOrGpu p;
  p.cpu_ms = values * ns_per_value * 1e-6 / cpu_threads;
  p.gpu_ms = kGpuStartupMs + 2.0 * values * bytes_per_value / kGpuCopyBytesPerMs;
  return p;
}

}  // namespace cuconv::engine
