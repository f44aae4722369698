// SPDX-License-Identifier: Apache-2.0
#pragma once
// The timing of the kernel-tuning tools (fast_tune.cu, wgmma_tune.cu): the median of 30 CUDA-event
// timings after 3 untimed runs. Header-only and free of OpenCV, as the tools are, so that they build
// from a changed tree with nvcc alone.
#include <src/gpu/cuda_check.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace cuconv::tune {

inline constexpr int kWarmups = 3;
inline constexpr int kRuns = 30;

/// Median of kRuns timings (ms) of `launch` on the default stream after kWarmups untimed runs.
template <class Launch>
float median_ms(Launch launch) {
  cudaEvent_t start, stop;
  CUCONV_CUDA_TRY(cudaEventCreate(&start));
  CUCONV_CUDA_TRY(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmups; ++i) launch();
  std::vector<float> times;
  for (int i = 0; i < kRuns; ++i) {
    CUCONV_CUDA_TRY(cudaEventRecord(start));
    launch();
    CUCONV_CUDA_TRY(cudaEventRecord(stop));
    CUCONV_CUDA_TRY(cudaEventSynchronize(stop));
    float ms = 0;
    CUCONV_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CUCONV_CUDA_TRY(cudaEventDestroy(start));
  CUCONV_CUDA_TRY(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace cuconv::tune
