// SPDX-License-Identifier: Apache-2.0
// Rank-1 filters: detection by exact factorisation through the largest weight (no SVD: a rank-1
// matrix is determined by the row and column through any non-zero entry, and the largest one loses
// least), and the error bounds of the paths that sum them (float and double on `fast`, the FP16
// row split with FP32 or tensor-core columns on `tensor`), which decide separable_for.
#include <opencv2/core/hal/interface.h>  // CV_8U, CV_16U, CV_32F
#include "filter/split_rules.hpp"
#include "filter/splits.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace cuconv::filter {

namespace {

/// A multiple of 1/256 no larger than 16: products with 8-bit pixels and their sums stay exact.
bool short_dyadic(float v) { return std::abs(v) <= 16.0f && std::ldexp(v, 8) == std::round(std::ldexp(v, 8)); }

bool all_short_dyadic(const SeparableFactors& f) {
  return std::all_of(f.horizontal.begin(), f.horizontal.end(), short_dyadic) &&
         std::all_of(f.vertical.begin(), f.vertical.end(), short_dyadic);
}

}  // namespace

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
  std::optional<SeparableFactors> best;
  int best_rank = -1;
  for (double scale : scales) {
    SeparableFactors f;
    f.vertical.resize(static_cast<std::size_t>(kh));
    f.horizontal.resize(static_cast<std::size_t>(kw));
    f.vertical_wide.resize(static_cast<std::size_t>(kh));
    f.horizontal_wide.resize(static_cast<std::size_t>(kw));
    for (int i = 0; i < kh; ++i) f.vertical_wide[static_cast<std::size_t>(i)] = at(i, pivot_col) / scale;
    for (int j = 0; j < kw; ++j) f.horizontal_wide[static_cast<std::size_t>(j)] = at(pivot_row, j) * scale / pivot;
    for (int i = 0; i < kh; ++i)
      f.vertical[static_cast<std::size_t>(i)] = static_cast<float>(f.vertical_wide[static_cast<std::size_t>(i)]);
    for (int j = 0; j < kw; ++j)
      f.horizontal[static_cast<std::size_t>(j)] = static_cast<float>(f.horizontal_wide[static_cast<std::size_t>(j)]);
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
    // Prefer bit-exact products, then short dyadic factors (exact sums for 8-bit pixels).
    const int rank = (exact ? 2 : 0) + (all_short_dyadic(f) ? 1 : 0);
    if (rank > best_rank) {
      best_rank = rank;
      best = std::move(f);
    }
  }
  return best;
}

namespace {

/// What the factorisation changes (sum |w - v*h|), the factors' magnitudes (sum |h|, sum |v|) and
/// the weights' (sum |w|), for factors in float (the float paths) or double (the wide path).
struct FactorChange {
  double factored = 0.0;
  double magnitude_h = 0.0;
  double magnitude_v = 0.0;
  double magnitude_w = 0.0;
};

template <class T>
FactorChange factor_change(const std::vector<T>& horizontal, const std::vector<T>& vertical,
                           const std::vector<double>& weights) {
  const int kw = static_cast<int>(horizontal.size());
  const int kh = static_cast<int>(vertical.size());
  FactorChange c;
  for (T h : horizontal) c.magnitude_h += std::abs(static_cast<double>(h));
  for (T v : vertical) c.magnitude_v += std::abs(static_cast<double>(v));
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j) {
      const double w = weights[static_cast<std::size_t>(i) * kw + j];
      // One rounding of the difference (a product of two floats is exact in double anyway).
      c.factored += std::abs(std::fma(-static_cast<double>(vertical[static_cast<std::size_t>(i)]),
                                      static_cast<double>(horizontal[static_cast<std::size_t>(j)]), w));
      c.magnitude_w += std::abs(w);
    }
  return c;
}

FactorChange factor_change(const SeparableFactors& f, const std::vector<double>& weights) {
  return factor_change(f.horizontal, f.vertical, weights);
}

}  // namespace

double separable_error_bound(const SeparableFactors& f, const std::vector<double>& weights, double max_input,
                             double delta) {
  // A kw-term row sum followed by a kh-term column sum plus delta: n = kw + kh + 1 rounding steps.
  const FactorChange c = factor_change(f, weights);
  const double g = gamma_n(static_cast<int>(f.horizontal.size() + f.vertical.size()) + 1);
  return max_input * (c.factored + g * c.magnitude_h * c.magnitude_v) + g * std::abs(delta);
}

namespace {

/// w * 2^exponent rounded to H = 2048 * high + low (|high| <= 2048, |low| <= 1024) and appended;
/// returns |w * 2^exponent - H|.
double append_tensor_parts(double w, int exponent, std::vector<int>& high, std::vector<int>& low) {
  const double scaled = std::ldexp(w, exponent);
  const double whole = std::nearbyint(scaled);
  const int h = static_cast<int>(std::nearbyint(whole / 2048.0));
  high.push_back(h);
  low.push_back(static_cast<int>(whole) - 2048 * h);
  return std::abs(scaled - whole);
}

}  // namespace

std::optional<TensorSplit> tensor_split(const std::vector<float>& horizontal) {
  double largest = 0.0;
  for (float h : horizontal) {
    if (!std::isfinite(h)) return std::nullopt;
    largest = std::max(largest, std::abs(static_cast<double>(h)));
  }
  if (largest == 0.0) return std::nullopt;
  TensorSplit split;
  split.exponent = tensor_exponent(largest);
  for (float h : horizontal)
    split.quantization += append_tensor_parts(static_cast<double>(h), split.exponent, split.high, split.low);
  split.quantization = std::ldexp(split.quantization, -split.exponent);
  return split;
}

namespace {

/// Rounding steps a term of the double sums passes at most: kw + kh + 1 on the FMA units
/// (kernels/fast_wide.cuh). On the FP64 tensor cores (kernels/fast_wide_mma.cuh, instance K: the
/// smallest odd side holding both) each MMA k-step may round its 4 products and 4 additions one
/// by one: a term's product, then up to 4 additions a k-step over ceil((K + 7) / 4) row k-steps,
/// its row sum's product and 4 a k-step over 2 ceil((K + 7) / 8) column k-steps, and delta.
int wide_rounding_steps(int kw, int kh) {
  const int k = std::max(kw, kh) | 1;
  const int mma = 4 * ((k + 10) / 4) + 8 * ((k + 14) / 8) + 3;
  return std::max(kw + kh + 1, mma);
}

}  // namespace

double wide_error_bound(const SeparableFactors& f, const std::vector<double>& weights, double max_input, double delta) {
  const FactorChange c = factor_change(f.horizontal_wide, f.vertical_wide, weights);
  const double g = gamma_n(
      wide_rounding_steps(static_cast<int>(f.horizontal_wide.size()), static_cast<int>(f.vertical_wide.size())), 53);
  // Each difference in `factored` may itself be off by an ulp of |w|: 2^-52 sum |w| more.
  return max_input * (c.factored + std::ldexp(c.magnitude_w, -52) + g * c.magnitude_h * c.magnitude_v) +
         g * std::abs(delta);
}

double tensor_error_bound(const SeparableFactors& f, const TensorSplit& split, const std::vector<double>& weights,
                          double delta) {
  const FactorChange c = factor_change(f, weights);
  const double g = gamma_n(static_cast<int>(f.vertical.size()) + 1);
  return 255.0 * (c.factored + split.quantization * c.magnitude_v + g * c.magnitude_h * c.magnitude_v) +
         g * std::abs(delta);
}

bool exact_in_half(double v) {
  if (v == 0.0) return true;
  const double a = std::abs(v);
  if (!(a <= 65504.0)) return false;
  int e = 0;
  std::frexp(a, &e);                       // a in [2^(e-1), 2^e)
  const int last = std::max(e - 11, -24);  // weight of the last bit: 11 significant bits, or the subnormal grid
  const double units = std::ldexp(a, -last);
  return units == std::nearbyint(units);
}

namespace {

/// sum |H| of a split's integers H = 2048 high + low.
double split_magnitude(const TensorSplit& split) {
  double sum = 0.0;
  for (std::size_t j = 0; j < split.high.size(); ++j) sum += std::abs(2048.0 * split.high[j] + split.low[j]);
  return sum;
}

double largest_magnitude(const std::vector<float>& values) {
  double largest = 0.0;
  for (float v : values) largest = std::max(largest, std::abs(static_cast<double>(v)));
  return largest;
}

}  // namespace

std::optional<TensorMmaScales> tensor_mma_scales(const TensorSplit& split, const std::vector<float>& vertical) {
  const double magnitude_h = split_magnitude(split);
  const double largest_v = largest_magnitude(vertical);
  if (magnitude_h == 0.0 || largest_v == 0.0) return std::nullopt;
  TensorMmaScales s;
  std::frexp(255.0 * magnitude_h, &s.sigma);  // 255 sum |H| in [2^(sigma-1), 2^sigma)
  s.sigma -= 15;
  std::frexp(largest_v, &s.tau);
  s.tau = 15 - s.tau;
  // The kernel's scale 2^(sigma - e - tau) must be a normal float (weights far from one would
  // underflow it).
  const int scale = s.sigma - split.exponent - s.tau;
  if (scale < -126 || scale > 127) return std::nullopt;
  for (std::size_t j = 0; j < split.high.size(); ++j)
    if (!exact_in_half(std::ldexp(split.high[j], 11 - s.sigma)) || !exact_in_half(std::ldexp(split.low[j], -s.sigma)))
      return std::nullopt;
  return s;
}

double tensor_mma_error_bound(const SeparableFactors& f, const TensorSplit& split, const TensorMmaScales& scales,
                              const std::vector<double>& weights, double delta) {
  const FactorChange c = factor_change(f, weights);
  const double magnitude_h =
      std::ldexp(split_magnitude(split), -split.exponent);  // the row sums are at most 255 times it
  const double largest_v = largest_magnitude(f.vertical);
  const double sum = 255.0 * magnitude_h * c.magnitude_v;  // every partial sum of the vertical pass is below it
  const double u = std::ldexp(1.0, -24);
  const double steps = tensor_mma_row_steps(static_cast<int>(f.vertical.size()));
  // Relative to the sum: the row sums' float addition (u) and FP16 split (2u), the vertical
  // weights' FP16 split (2u), the dropped low x low product (4u), the epilogue's additions of the
  // steps' accumulators (steps - 1 of u). Absolute: the FP16 subnormal grid under the low parts
  // (2^-25 in R' and in V' units).
  const double splits = (9.0 + (steps - 1.0)) * u * sum;
  const double r_unit = std::ldexp(1.0, scales.sigma - split.exponent);  // one R' unit in pixel-weight units
  const double floors = std::ldexp(1.0, -25) * r_unit * c.magnitude_v + static_cast<double>(f.vertical.size()) *
                                                                            std::ldexp(1.0, -25) *
                                                                            std::ldexp(32768.0, -scales.tau) * r_unit;
  // Tensor cores: one high x high MMA a step (C = 0, or the cross sum, far below its products)
  // and two cross MMAs a step (products and C below 2^-10 of the sum).
  // (The high parts may exceed what they stand for by 2^-11: 1.001.)
  const double accumulation = 1.001 * (steps * 17.0 * 2.0 * u * 255.0 * magnitude_h * largest_v +
                                       2.0 * steps * 17.0 * 2.0 * u * std::ldexp(sum, -10));
  // The epilogue: the scale is exact; delta (as float) with one rounding of the sum.
  const double epilogue =
      u * (sum + std::abs(delta)) + std::abs(delta - static_cast<double>(static_cast<float>(delta)));
  return 255.0 * (c.factored + split.quantization * c.magnitude_v) + splits + floors + accumulation + epilogue;
}

std::optional<SeparableFactors> separable_for(const std::vector<double>& weights, int kw, int kh, int input_depth,
                                              int output_depth, double delta) {
  std::optional<SeparableFactors> factors = factor_separable(weights, kw, kh);
  if (!factors || output_depth == CV_32F) return factors;
  // 16-bit results: float keeps too few bits below the unit; double sums (fits_double_rank1) keep plenty.
  if (input_depth == CV_16U && output_depth == CV_16U) {
    factors->fits_float_rank1 = false;
    factors->fits_double_rank1 =
        integer_results_hold(weights, delta, wide_error_bound(*factors, weights, 65535.0, delta), 65535);
    return factors->fits_double_rank1 ? factors : std::nullopt;
  }
  // Inexact sums on other integer outputs: only 8-bit input, where float keeps 16 bits below the unit.
  if (input_depth != CV_8U) return std::nullopt;
  const std::optional<TensorSplit> split = tensor_split(factors->horizontal);
  if (factors->exact && all_short_dyadic(*factors)) {  // exact sums
    factors->fits_tensor_split = split && split->quantization == 0.0;
    return factors;
  }
  factors->fits_float_rank1 =
      integer_results_hold(weights, delta, separable_error_bound(*factors, weights, 255.0, delta));
  factors->fits_tensor_split =
      split && integer_results_hold(weights, delta, tensor_error_bound(*factors, *split, weights, delta));
  if (split && kh <= kTensorMmaMaxSide) {
    const std::optional<TensorMmaScales> scales = tensor_mma_scales(*split, factors->vertical);
    factors->fits_tensor_mma_split =
        scales &&
        integer_results_hold(weights, delta, tensor_mma_error_bound(*factors, *split, *scales, weights, delta));
  }
  if (!factors->fits_float_rank1 && !factors->fits_tensor_split && !factors->fits_tensor_mma_split) return std::nullopt;
  return factors;
}

}  // namespace cuconv::filter
