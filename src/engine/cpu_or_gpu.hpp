// SPDX-License-Identifier: Apache-2.0
#pragma once
// `auto` in a process without a warm GPU: before CUDA is touched, the CPU's time for the image
// (cv::filter2D, from the image's size and the filter's taps) is weighed against the GPU's
// start-up (creating a CUDA context costs about half a second on the GPU nodes) plus its
// transfers, and the CPU is taken where it is faster. Under `cuconv serve` the GPU is warm and
// the rule does not apply. The constants are measured (docs/accuracy.md, "CPU or GPU").
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

/// The model's measured constants (docs/accuracy.md, "CPU or GPU"; the tests move them to see
/// the boundary follow).
struct CpuOrGpuCosts {
  /// cv::filter2D on one hardware thread, per value (pixel x channel) and tap of a direct sum;
  /// from `dft_from_taps` taps OpenCV filters through the DFT, whose cost per value does not grow
  /// with the taps.
  double cpu_ns_per_tap = 0.5;
  int dft_from_taps = 121;
  double cpu_dft_ns_per_value = 90.0;
  /// filter2D's threads speed it up by at most this factor, however many cores there are.
  unsigned cpu_effective_threads = 4;
  /// Creating the CUDA context and loading the kernels on the GPU nodes, and pageable copies.
  double gpu_startup_ms = 500.0;
  double gpu_copy_bytes_per_ms = 10e6;
};

/// The prediction for a `width` x `height` image of `channels` channels of `bytes_per_value`
/// bytes, filtered by `filter`, on `cpu_threads` hardware threads (0: this machine's).
[[nodiscard]] CpuOrGpu predict_cpu_or_gpu(const Filter& filter, int width, int height, int channels,
                                          int bytes_per_value, unsigned cpu_threads = 0,
                                          const CpuOrGpuCosts& costs = {});

}  // namespace cuconv::engine
