// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fft_ties.hpp
/// `fft` on integer outputs: which results it sums again directly (host side; no CUDA headers).
///
/// A tile transform leaves each output within a small error of the true sum, in either direction.
/// Where the true sum is a tie n + 1/2 (dyadic weights on integer pixels: gauss3 on a chessboard
/// makes 1 value in 16 one) a direct float sum rounds it half to even, as filter2D does, while the
/// transform's error tips it either way (bench/results/kernel-notes/fft.md, 'Accuracy'). So results whose
/// transform value lies within the margin below of a
/// rounding boundary are summed again in filter row-major order from delta, the order of every
/// direct variant (kernels/fft.cuh, fft_direct_sum). Elsewhere the transform's rounding is the true
/// sum's, which a direct float sum's own rounding can miss only within about 1e-6 of the range.
#include "gpu/launch/launch.hpp"

#include <cmath>
#include <cstddef>

namespace cuconv::gpu {

/// Error assumed for the transform, relative to (input maximum x sum|w|): 2^-19 = 1.9e-6, about
/// eight times the largest error measured (bench/results/kernel-notes/fft.md, 'Tie margin'); the GPU tests
/// check ties on cuFFT.
inline constexpr double kFftRelativeError = 1.0 / 524288.0;

/// Margins above this leave repairs off: the band they cover (2 x margin of every unit) would be
/// over 1% of the results, each a kw x kh direct sum in a divergent thread.
inline constexpr double kFftMaxTieMargin = 0.005;

/// The distance from a rounding boundary (n + 1/2) under which `fft` sums a result again, for
/// `count` weights on `input` pixels giving `output` pixels: 2^-19 x (input maximum) x sum|w|,
/// plus 2^-22 x (output's largest magnitude + 1) for the float addition of delta and the spacing
/// of floats near the output's largest values. 0 when repairs are off: float output, or a margin
/// over kFftMaxTieMargin (16-bit outputs, where the second term alone is 0.008 for 16S and 0.016
/// for 16U; 8-bit ones from filters whose sum|w| passes about 10; NaN or infinite weights).
template <class Weight>
[[nodiscard]] double fft_tie_margin(PixelType input, PixelType output, const Weight* weights, std::size_t count) {
  if (output == PixelType::f32) return 0.0;
  const double input_max = input == PixelType::u8 ? 255.0 : input == PixelType::u16 ? 65535.0 : 32768.0;
  const double output_max = output == PixelType::u8 ? 256.0 : output == PixelType::u16 ? 65536.0 : 32768.0;
  double abs_sum = 0.0;
  for (std::size_t i = 0; i < count; ++i) abs_sum += std::fabs(static_cast<double>(weights[i]));
  const double margin = kFftRelativeError * input_max * abs_sum + output_max / 4194304.0;
  return margin <= kFftMaxTieMargin ? margin : 0.0;  // false for NaN
}

/// Slots of the list of outputs that `fft` sums again after its scatter (kernels/fft.cuh,
/// fft_repair_ties), for a batch of `batch_outputs` outputs. The margin's band holds about
/// 2 x margin of the outputs (at most 1%) of images without exact ties; 1 in 32 leaves room for
/// images with many exact ties, and a full list only sends the rest back to the scatter's threads.
[[nodiscard]] constexpr long long fft_repair_capacity(long long batch_outputs) noexcept {
  return batch_outputs / 32 + 1024;
}

}  // namespace cuconv::gpu
