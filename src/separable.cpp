// Rank-1 detection by exact factorisation through the largest weight (no SVD: a rank-1 matrix is
// determined by the row and column through any non-zero entry, and the largest one loses least).
#include "separable.hpp"

#include <array>
#include <cmath>
#include <cstddef>

namespace cuconv::detail {

std::optional<SeparableFactors> factor_separable(const std::vector<double>& weights, int kw, int kh,
                                                 double relative_tolerance) {
  if (kw <= 0 || kh <= 0 || weights.size() != static_cast<std::size_t>(kw) * static_cast<std::size_t>(kh))
    return std::nullopt;
  const auto at = [&](int i, int j) { return weights[static_cast<std::size_t>(i) * kw + j]; };
  int pivot_row = 0;
  int pivot_col = 0;
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j)
      if (std::abs(at(i, j)) > std::abs(at(pivot_row, pivot_col))) {
        pivot_row = i;
        pivot_col = j;
      }
  const double pivot = at(pivot_row, pivot_col);
  if (pivot == 0.0 || !std::isfinite(pivot)) return std::nullopt;  // all zero: nothing to gain
  const double tolerance = relative_tolerance * std::abs(pivot);

  // vertical[i] = k[i][q] / s and horizontal[j] = k[p][j] * s / pivot for a scale s. Every s gives
  // the same product in exact arithmetic; the candidates differ in what survives rounding to
  // float: s = 1 keeps integer columns (Sobel), sqrt|pivot| splits a symmetric gaussian evenly,
  // its nearest power of two keeps dyadic weights dyadic.
  const double root = std::sqrt(std::abs(pivot));
  const std::array<double, 4> scales{1.0, root, std::exp2(std::round(std::log2(root))), pivot};
  std::optional<SeparableFactors> within_tolerance;
  for (double scale : scales) {
    SeparableFactors f;
    f.vertical.resize(static_cast<std::size_t>(kh));
    f.horizontal.resize(static_cast<std::size_t>(kw));
    for (int i = 0; i < kh; ++i) f.vertical[static_cast<std::size_t>(i)] = static_cast<float>(at(i, pivot_col) / scale);
    for (int j = 0; j < kw; ++j)
      f.horizontal[static_cast<std::size_t>(j)] = static_cast<float>(at(pivot_row, j) * scale / pivot);
    bool rank_one = true;
    bool exact = true;
    for (int i = 0; i < kh && rank_one; ++i) {
      for (int j = 0; j < kw; ++j) {
        const float product = f.vertical[static_cast<std::size_t>(i)] * f.horizontal[static_cast<std::size_t>(j)];
        if (std::abs(static_cast<double>(product) - at(i, j)) > tolerance) {
          rank_one = false;
          break;
        }
        exact = exact && product == static_cast<float>(at(i, j));
      }
    }
    if (!rank_one) return std::nullopt;  // the scale cannot repair a rank above 1
    f.exact = exact;
    if (exact) return f;
    if (!within_tolerance) within_tolerance = std::move(f);
  }
  return within_tolerance;
}

}  // namespace cuconv::detail
