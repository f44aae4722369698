// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one CUDA error idiom: CUCONV_CUDA_TRY(call) throws cuconv::Error{gpu} carrying the call,
// file:line and the CUDA error name and text; CUCONV_CHECK_LAUNCH() follows every kernel launch.
#include <cuconv/error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace cuconv::gpu {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw Error(ErrorKind::gpu, std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                                  cudaGetErrorString(status) + ") in " + call + " at " + file + ":" +
                                  std::to_string(line));
}

}  // namespace cuconv::gpu

#define CUCONV_CUDA_TRY(call)                                                                                      \
  do {                                                                                                             \
    const cudaError_t cuconv_status_ = (call);                                                                     \
    if (cuconv_status_ != cudaSuccess) ::cuconv::gpu::throw_cuda_error(cuconv_status_, #call, __FILE__, __LINE__); \
  } while (0)

#ifdef CUCONV_DEBUG_SYNC
#define CUCONV_CHECK_LAUNCH()                 \
  do {                                        \
    CUCONV_CUDA_TRY(cudaPeekAtLastError());   \
    CUCONV_CUDA_TRY(cudaDeviceSynchronize()); \
  } while (0)
#else
#define CUCONV_CHECK_LAUNCH() CUCONV_CUDA_TRY(cudaPeekAtLastError())
#endif
