#pragma once
// Choosing the CUDA device of the calling thread (ConvolveOptions::device).

namespace cuconv::detail {

/// Makes `device` the calling thread's current CUDA device. Throws Error{gpu} (through
/// CUCONV_CUDA_TRY) when the index does not name a usable device.
void select_device(int device);

}  // namespace cuconv::detail
