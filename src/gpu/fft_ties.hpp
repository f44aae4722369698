#pragma once
/// @file fft_ties.hpp
/// `fft` on integer outputs: which results it sums again directly (host side; no CUDA headers).
///
/// A tile transform leaves each output within a small error of the true sum, in either direction.
/// Where the true sum is a tie n + 1/2 (dyadic weights on integer pixels: gauss3 on a chessboard
/// makes 1 value in 16 one) a direct float sum rounds it half to even, as filter2D does, while the
/// transform's error tips it either way: before this rule `fft` differed from filter2D by 1 on up
/// to 5.6% of such values. So results whose transform value lies within the margin below of a
/// rounding boundary are summed again in filter row-major order from delta, the order of every
/// direct variant (kernels/fft.cuh, fft_direct_sum). Elsewhere the transform's rounding is the true
/// sum's, which a direct float sum's own rounding can miss only within about 1e-6 of the range.
#include <cmath>
#include <cstddef>

namespace cuconv::detail {

/// Error assumed for the transform, relative to (input maximum x sum|w|): 2^-19 = 1.9e-6.
/// Measured with float32 FFTs of 512^2 tiles (scipy, 8-bit noise, chessboard and flat images,
/// 15x15 to 63x63 filters): at most 2.3e-7 of that range; the GPU tests check ties on cuFFT.
inline constexpr double kFftRelativeError = 1.0 / 524288.0;

/// Margins above this leave repairs off: the band they cover (2 x margin of every unit) would be
/// over 1% of the results, each a kw x kh direct sum in a divergent thread.
inline constexpr double kFftMaxTieMargin = 0.005;

/// The distance from a rounding boundary (n + 1/2) under which `fft` sums a result again, for
/// integer outputs whose repaired values lie within +-`output_max` (256 for 8U: 255 and the
/// next), input pixels up to `input_max` and `count` weights; 0 when repairs are off (float
/// output, or a margin over kFftMaxTieMargin: 16-bit outputs, where the float spacing term alone
/// is 0.008 (16S) or 0.016 (16U), or filters whose sum|w| x 255 passes 2600). The second term covers the float addition of delta
/// and the spacing of floats near the output's largest values.
template <class Weight>
[[nodiscard]] double fft_tie_margin(bool integer_output, double output_max, double input_max, const Weight* weights,
                                    std::size_t count) {
  if (!integer_output) return 0.0;
  double abs_sum = 0.0;
  for (std::size_t i = 0; i < count; ++i) abs_sum += std::fabs(static_cast<double>(weights[i]));
  const double margin = kFftRelativeError * input_max * abs_sum + output_max / 4194304.0;
  return margin <= kFftMaxTieMargin ? margin : 0.0;  // NaN or infinite weights: off
}

}  // namespace cuconv::detail
