// SPDX-License-Identifier: Apache-2.0
#pragma once
// Choosing the CUDA device of the calling thread (ConvolveOptions::device), and what kind of GPU
// it is (the key of auto's tuning table, src/gpu/tuning/auto_tuning.hpp).
#include "gpu/tuning/auto_tuning.hpp"

namespace cuconv::gpu {

/// Makes `device` the calling thread's current CUDA device. Throws Error{gpu} (through
/// CUCONV_CUDA_TRY) when the index does not name a usable device.
void select_device(int device);

/// The calling thread's current device as auto's tuning table is keyed (asked once per device);
/// major 0 when there is no usable device. The product name lives as long as the process.
[[nodiscard]] tuning::GpuKind current_gpu_kind();

}  // namespace cuconv::gpu
