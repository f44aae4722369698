// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file constant_filter.cuh
/// The filter weights in __constant__ memory (PMPP Fig. 7.9): every thread of a warp reads the
/// same weight at the same time, which the constant cache broadcasts in one transaction.
/// `static`: each translation unit (one per variant) owns its copy; no relocatable device code.
#include "params.hpp"

#include <cuda_runtime.h>

namespace cuconv::kernels {

static __constant__ float c_filter_weights[kMaxFilterTaps];
static_assert(sizeof(float) * kMaxFilterTaps <= 65536, "constant memory holds 64 KiB");

/// Stream-ordered copy of `count` weights (row-major) from device memory into this unit's constant
/// filter: a copy within the device, so the host never waits for it (one from pageable host
/// memory may wait for the stream).
static inline cudaError_t upload_constant_filter(const float* device_weights, int count, cudaStream_t stream) {
  return cudaMemcpyToSymbolAsync(c_filter_weights, device_weights, sizeof(float) * count, 0, cudaMemcpyDeviceToDevice,
                                 stream);
}

/// Filter extent: compile-time 2R+1 when the radius is in the supported list, else run time.
template <int Radius>
__device__ __forceinline__ int filter_cols(const ConvParams& p) {
  return Radius == kRuntimeRadius ? p.kw : 2 * Radius + 1;
}
template <int Radius>
__device__ __forceinline__ int filter_rows(const ConvParams& p) {
  return Radius == kRuntimeRadius ? p.kh : 2 * Radius + 1;
}

}  // namespace cuconv::kernels
