// SPDX-License-Identifier: Apache-2.0
#pragma once
// The 8-bit dense split as the dense tensor kernels take it (kernels/tensor_dense.cuh's
// TensorDenseTaps): shared by the mma.sync launcher (launch_tensor.cu) and the warpgroup one
// (launch_tensor_wgmma.cu), which must give the same bits.
#include "filter/splits.hpp"

#include <cuconv/error.hpp>
#include <kernels/tensor_dense.cuh>

#include <cmath>
#include <cstddef>
#include <string>

namespace cuconv::gpu {

/// The kh x kw weights' three digits and the scale 2^-exponent; Error{internal} for a split of
/// another digit count (the 16-bit and float splits belong to the planes kernel).
inline kernels::TensorDenseTaps dense_taps_for(const filter::DenseTensorSplit& split, int kw, int kh) {
  kernels::TensorDenseTaps taps{};
  constexpr std::size_t kDigits = sizeof(taps.digit) / sizeof(taps.digit[0]);
  if (split.digits.size() != kDigits)
    throw Error(ErrorKind::internal, "tensor: the 8-bit dense split has " + std::to_string(split.digits.size()) +
                                         " weight digits where the kernels take " + std::to_string(kDigits));
  for (std::size_t d = 0; d < kDigits; ++d)
    for (int k = 0; k < kw * kh; ++k)
      taps.digit[d][k] = static_cast<signed char>(split.digits[d][static_cast<std::size_t>(k)]);
  taps.scale = std::ldexp(1.0f, -split.exponent);
  return taps;
}

}  // namespace cuconv::gpu
