// SPDX-License-Identifier: Apache-2.0
#pragma once
// Timing shared by the standalone peers (bench/npp_peer.cu, bench/cudnn_peer.cu), which nvcc
// builds on a GPU node from bench/ alone: median of CUDA events after warm-up, as cuconv_bench.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace peer {

/// Set by each peer's main: the program name in error messages.
inline const char* program = "peer";

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorName(status));
    std::exit(1);
  }
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// Median milliseconds of `work` on `stream` over `reps` runs, after three warm-up runs (the
/// first also tells a slow case: cases over 50 ms stop after three timed runs).
template <class Work>
double time_median_ms(int reps, cudaStream_t stream, Work work) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  work();
  check(cudaStreamSynchronize(stream), "sync");
  std::vector<double> ms;
  for (int i = 0; i < reps + 2; ++i) {
    check(cudaEventRecord(start, stream), "record");
    work();
    check(cudaEventRecord(stop, stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "elapsed");
    if (i >= 2) ms.push_back(t);  // two more warm-up runs
    if (t > 50.0f && ms.size() >= 3) break;
  }
  check(cudaEventDestroy(start), "event");
  check(cudaEventDestroy(stop), "event");
  return median(ms);
}

}  // namespace peer
