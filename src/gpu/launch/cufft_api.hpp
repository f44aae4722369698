// SPDX-License-Identifier: Apache-2.0
#pragma once
// cuFFT, loaded when the `fft` variant first runs: the library is large (hundreds of MB), part of
// every CUDA toolkit on GPU nodes, and needed by no other path, so the binary and its bundle do
// not depend on it. Without it `fft` fails with a clear error and `auto` uses direct kernels.
#include <cufft.h>

#include <string>

namespace cuconv::gpu {

struct CufftApi {
  decltype(&cufftPlanMany) plan_many;
  decltype(&cufftExecR2C) exec_r2c;
  decltype(&cufftExecC2R) exec_c2r;
  decltype(&cufftSetStream) set_stream;
  decltype(&cufftDestroy) destroy;
};

/// The loaded API, or nullptr with `reason` set (searched: libcufft.so.12, libcufft.so,
/// $CUDA_HOME/lib64, /usr/local/cuda/lib64).
[[nodiscard]] const CufftApi* cufft_api(std::string* reason = nullptr);

/// Throws Error{gpu} naming the call and the cuFFT status when `status` is not CUFFT_SUCCESS.
void check_cufft(cufftResult status, const char* call);

}  // namespace cuconv::gpu
