// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_taps.cuh
/// `fast` (kernels/fast.cuh): what one input row adds to the partial output rows of the strip
/// walk, for a dense filter and for a separable one. A thread's row window `in` holds its kVec
/// elements with the halo each side: element k's tap column j is in[FirstTap + k + j * Channels].
/// `partial[q]` is the partial output row the filter's row K - 1 - q applies to, q in [0, K).
/// Both are unrolled whole: the weights' indices are compile-time offsets into the kernel's
/// parameter bank.
#include "fast_pack.cuh"

namespace cuconv::kernels {

/// Dense K x K filter (weights row-major): K x K x Vec FMAs a row.
template <int K, int Channels, int FirstTap, int Count, int Window, int Vec>
__device__ __forceinline__ void fast_add_row_dense(const FilterTaps<Count>& taps, const float (&in)[Window],
                                                   float (*partial)[Vec]) {
#pragma unroll
  for (int q = 0; q < K; ++q)
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int k = 0; k < Vec; ++k)
        partial[q][k] = fmaf(taps.w[(K - 1 - q) * K + j], in[FirstTap + k + j * Channels], partial[q][k]);
}

/// Separable filter (K horizontal weights, then K vertical ones): the row is filtered
/// horizontally once (K FMAs an element), then added into each partial row with one vertical
/// weight: 2 x K x Vec FMAs a row.
template <int K, int Channels, int FirstTap, int Count, int Window, int Vec>
__device__ __forceinline__ void fast_add_row_separable(const FilterTaps<Count>& taps, const float (&in)[Window],
                                                       float (*partial)[Vec]) {
  float horizontal[Vec];
#pragma unroll
  for (int k = 0; k < Vec; ++k) {
    float h = 0.0f;
#pragma unroll
    for (int j = 0; j < K; ++j) h = fmaf(taps.w[j], in[FirstTap + k + j * Channels], h);
    horizontal[k] = h;
  }
#pragma unroll
  for (int q = 0; q < K; ++q)
#pragma unroll
    for (int k = 0; k < Vec; ++k) partial[q][k] = fmaf(taps.w[K + (K - 1 - q)], horizontal[k], partial[q][k]);
}

}  // namespace cuconv::kernels
