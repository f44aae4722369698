// SPDX-License-Identifier: Apache-2.0
// Kernel timing for --bench and cuconv_bench (src/gpu/bench_timing.hpp).
#include "gpu/bench_timing.hpp"

#include "gpu/memory/device_memory.hpp"

#include <algorithm>

namespace cuconv::gpu {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double time_median_ms(cudaStream_t stream, const TimingRuns& runs, const std::function<void()>& work) {
  for (int i = 0; i < runs.warm_up; ++i) work();
  CudaEvent start, stop;
  std::vector<double> ms;
  for (int i = 0; i < runs.runs; ++i) {
    start.record(stream);
    work();
    stop.record(stream);
    ms.push_back(CudaEvent::elapsed_ms(start, stop));
    if (runs.slow_ms > 0 && ms.back() > runs.slow_ms && ms.size() >= 3) break;
  }
  return median(std::move(ms));
}

void time_variant(Variant variant, const std::vector<VariantLaunch>& launches, int runs, cudaStream_t stream,
                  StageTimes& times) {
  double moved = 0;   // bytes the kernels read and write
  double copied = 0;  // bytes the roof's copies read (and write)
  for (const VariantLaunch& launch : launches) {
    moved += static_cast<double>(launch.in.row_bytes() + launch.out.row_bytes()) * launch.in.height;
    copied += static_cast<double>(std::min(launch.in.pitch, launch.out.pitch)) * launch.in.height;
  }
  // A contiguous copy: cudaMemcpy2D between pitched images runs at about half the bandwidth.
  const auto copy_all = [&] {
    for (const VariantLaunch& launch : launches) {
      const std::size_t bytes =
          std::min(launch.in.pitch, launch.out.pitch) * static_cast<std::size_t>(launch.in.height);
      CUCONV_CUDA_TRY(cudaMemcpyAsync(launch.out.data, launch.in.data, bytes, cudaMemcpyDeviceToDevice, stream));
    }
  };
  const auto launch_all = [&] {
    for (const VariantLaunch& launch : launches) launch_variant(variant, launch.args);
  };
  times.bench_runs = runs;
  times.bytes_moved = moved;
  times.copy_roof_ms = time_median_ms(stream, {runs}, copy_all);
  if (copied > 0) times.copy_roof_ms *= moved / (2.0 * copied);
  times.kernel_median_ms = time_median_ms(stream, {runs}, launch_all);
}

}  // namespace cuconv::gpu
