// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rules both kinds of split (rank-1: filter/rank1_splits.cpp; dense: filter/dense_splits.cpp)
// judge themselves by: the rounding of n float or double steps, the tensor splits' scale, and
// whether an error bound keeps integer results within the pass rule.
#include "filter/splits.hpp"

#include <cmath>
#include <vector>

namespace cuconv::filter {

/// gamma_n of n rounding steps of unit roundoff 2^-bits (Higham, "Accuracy and Stability", 3.1):
/// float by default, double for the wide path.
inline double gamma_n(int n, int bits = 24) {
  const double nu = n * std::ldexp(1.0, -bits);
  return nu / (1.0 - nu);
}

/// The exponent both tensor splits scale by: 2^exponent * largest lies in (2^21, 2^22], 22 bits
/// for the largest weight, and the rounded integers stay within 2048 * 2048.
inline int tensor_exponent(double largest) {
  int exponent = static_cast<int>(std::floor(std::log2(std::ldexp(1.0, 22) / largest)));
  while (std::ldexp(largest, exponent) > std::ldexp(1.0, 22)) --exponent;
  return exponent;
}

/// Whether a rounding error within `bound` keeps integer results within the pass rule: the bound
/// stays under kSeparableErrorLimit and no flat area (every pixel of the window equal, any input
/// value up to `max_input`) sums to within it of a tie.
inline bool integer_results_hold(const std::vector<double>& weights, double delta, double bound, int max_input = 255) {
  if (bound > kSeparableErrorLimit) return false;
  double sum = 0.0;
  for (double w : weights) sum += w;
  for (int v = 0; v <= max_input; ++v) {
    const double exact = v * sum + delta;
    const double fraction = exact - std::floor(exact);
    if (std::abs(fraction - 0.5) <= bound) return false;
  }
  return true;
}

}  // namespace cuconv::filter
