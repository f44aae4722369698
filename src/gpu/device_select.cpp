// Device selection for callers that spread work over several GPUs (batch mode, --devices).
#include "gpu/device_select.hpp"

#include "gpu/cuda_check.hpp"

#include <cuconv/convolve.hpp>

#include <cuda_runtime_api.h>

namespace cuconv {

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for a query
    return 0;
  }
  return count;
}

namespace detail {

void select_device(int device) { CUCONV_CUDA_TRY(cudaSetDevice(device)); }

}  // namespace detail
}  // namespace cuconv
