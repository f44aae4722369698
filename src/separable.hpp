#pragma once
// Rank-1 (separable) filters: k[i][j] = vertical[i] * horizontal[j]. A separable kh x kw filter
// costs kw + kh multiply-adds per output instead of kw * kh.
#include <optional>
#include <vector>

namespace cuconv::detail {

struct SeparableFactors {
  std::vector<float> horizontal;  ///< kw weights, applied along each row first
  std::vector<float> vertical;    ///< kh weights, applied down the columns
  bool exact = false;             ///< every float product equals the float weight exactly
};

/// Factors a kh x kw row-major filter when it is rank 1 within `relative_tolerance` of its
/// largest weight. Among the possible scalings it prefers one whose float products reproduce the
/// weights bit for bit (gaussian presets with power-of-two sums, Sobel, ...), so results agree
/// with the direct sum on exactly representable sums.
[[nodiscard]] std::optional<SeparableFactors> factor_separable(const std::vector<double>& weights, int kw,
                                                               int kh, double relative_tolerance = 1e-6);

/// The factors `fast` may use, or nullopt when it must sum densely. Float outputs: any rank-1
/// filter (the float rule is relative, and one pass of kw and one of kh terms round less than a
/// kw * kh sum). Integer outputs must round ties exactly as cv::filter2D's direct sum does, so
/// only 8U input with short dyadic factors (multiples of 1/256, at most 16 in magnitude, their
/// products the weights bit for bit: the presets' gaussians, Sobel, 2^n boxes), where every
/// product and sum is exact in float either way. (Factors such as 1/9 reproduce float(1/81)
/// but round differently from the direct sum, which tips exact ties: box:9 with --delta 1.5.)
[[nodiscard]] std::optional<SeparableFactors> separable_for(const std::vector<double>& weights, int kw, int kh,
                                                            int input_depth, int output_depth);

}  // namespace cuconv::detail
