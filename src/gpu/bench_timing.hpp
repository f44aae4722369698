// SPDX-License-Identifier: Apache-2.0
#pragma once
// Kernel timing for --bench and cuconv_bench: the median of CUDA-event timings of queued work.
#include "gpu/launch/launch.hpp"

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace cuconv::gpu {

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
[[nodiscard]] double median(std::vector<double> values);

/// How time_median_ms repeats the work.
struct TimingRuns {
  int runs = 1;        ///< timed runs
  int warm_up = 0;     ///< untimed runs first
  double slow_ms = 0;  ///< a run slower than this ends the timing after three runs (0: never)
};

/// Median milliseconds (CUDA events on `stream`) of `work`, which queues its GPU work on `stream`.
[[nodiscard]] double time_median_ms(cudaStream_t stream, const TimingRuns& runs, const std::function<void()>& work);

/// --bench: `runs` timings of `launches` (the variant's launches over one image, queued again)
/// and of the memory roof, a device-to-device copy of the bytes each launch reads into the buffer
/// it writes, scaled to the bytes the kernels move; the medians go into `times`. The copy goes
/// first: it overwrites the outputs, which the last kernel run then restores.
void time_variant(Variant variant, const std::vector<VariantLaunch>& launches, int runs, cudaStream_t stream,
                  StageTimes& times);

}  // namespace cuconv::gpu
