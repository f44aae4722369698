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

}  // namespace cuconv::detail
