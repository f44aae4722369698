// SPDX-License-Identifier: Apache-2.0
#pragma once
// `auto` in a process without a warm GPU: before CUDA is touched, the CPU's time for the image
// (cv::filter2D, from the image's size and the filter's taps) is weighed against the GPU's
// start-up (creating a CUDA context costs about half a second on the GPU nodes) plus its
// transfers, and the CPU is taken where it is faster. Under `cuconv serve` the GPU is warm and
// the rule does not apply. The constants are measured (bench/results/benchmarks.md, "CPU or GPU").
#include <cuconv/filter.hpp>

#include <string>

namespace cuconv::engine {

/// The two predictions for one image, in milliseconds.
struct CpuOrGpu {
  double cpu_ms = 0;  ///< cv::filter2D on this machine's hardware threads
  double gpu_ms = 0;  ///< CUDA start-up + upload + download (the kernel itself is small beside them)
  [[nodiscard]] bool cpu_faster() const noexcept { return cpu_ms < gpu_ms; }
  /// "auto: the CPU (about 12 ms) beats the GPU's start-up and copies (about 540 ms)" or the reverse.
  [[nodiscard]] std::string reason() const;
};

/// The prediction for a `width` x `height` image of `channels` channels of `bytes_per_value`
/// bytes, filtered by `filter`, on `cpu_threads` hardware threads (0: this machine's).
[[nodiscard]] CpuOrGpu predict_cpu_or_gpu(const Filter& filter, int width, int height, int channels,
                                          int bytes_per_value, unsigned cpu_threads = 0);

}  // namespace cuconv::engine
