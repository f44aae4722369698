// Rank-1 detection by exact factorisation through the largest weight (no SVD: a rank-1 matrix is
// determined by the row and column through any non-zero entry, and the largest one loses least).
#include "filter/splits.hpp"

#include <opencv2/core/hal/interface.h>  // CV_8U, CV_32F

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace cuconv::detail {

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
    for (int i = 0; i < kh; ++i) f.vertical[static_cast<std::size_t>(i)] = static_cast<float>(f.vertical_wide[static_cast<std::size_t>(i)]);
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

/// gamma_n of n rounding steps of unit roundoff 2^-bits (Higham, "Accuracy and Stability", 3.1):
/// float by default, double for the wide path.
double gamma(int n, int bits = 24) {
  const double nu = n * std::ldexp(1.0, -bits);
  return nu / (1.0 - nu);
}

}  // namespace

double separable_error_bound(const SeparableFactors& f, const std::vector<double>& weights, double max_input,
                             double delta) {
  // A kw-term row sum followed by a kh-term column sum plus delta: n = kw + kh + 1 rounding steps.
  const FactorChange c = factor_change(f, weights);
  const double g = gamma(static_cast<int>(f.horizontal.size() + f.vertical.size()) + 1);
  return max_input * (c.factored + g * c.magnitude_h * c.magnitude_v) + g * std::abs(delta);
}

namespace {

/// The exponent both tensor splits scale by: 2^exponent * largest lies in (2^21, 2^22], 22 bits
/// for the largest weight, and the rounded integers stay within 2048 * 2048.
int tensor_exponent(double largest) {
  int exponent = static_cast<int>(std::floor(std::log2(std::ldexp(1.0, 22) / largest)));
  while (std::ldexp(largest, exponent) > std::ldexp(1.0, 22)) --exponent;
  return exponent;
}

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

double wide_error_bound(const SeparableFactors& f, const std::vector<double>& weights, double max_input,
                        double delta) {
  const FactorChange c = factor_change(f.horizontal_wide, f.vertical_wide, weights);
  const double g = gamma(static_cast<int>(f.horizontal_wide.size() + f.vertical_wide.size()) + 1, 53);
  // Each difference in `factored` may itself be off by an ulp of |w|: 2^-52 sum |w| more.
  return max_input * (c.factored + std::ldexp(c.magnitude_w, -52) + g * c.magnitude_h * c.magnitude_v) +
         g * std::abs(delta);
}

namespace {

/// Whether a rounding error within `bound` keeps integer results within the pass rule: the bound
/// stays under kSeparableErrorLimit and no flat area (every pixel of the window equal, any input
/// value up to `max_input`) sums to within it of a tie.
bool integer_results_hold(const std::vector<double>& weights, double delta, double bound, int max_input = 255) {
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

}  // namespace

namespace {

/// The weights at scale 2^e as balanced base-256 digits (each in [-128, 127]; |H| <= 2^22 leaves
/// the top one of three within 64, |H| <= 2^30 the top one of four) into `split.digits` (as many
/// digits as it holds); returns sum |w 2^e - H|. `keep_sum`: sum H is the integer nearest sum w 2^e,
/// the weights whose rounding left the largest remainders moved by one unit (largest remainder
/// method), so a flat area's result is off by at most half a unit of 2^-e per unit of pixel.
double to_digits(const std::vector<double>& weights, int e, DenseTensorSplit& split, bool keep_sum = false) {
  std::vector<long long> whole;
  std::vector<double> remainder;  // w 2^e - H
  long double scaled_sum = 0.0L;
  long long whole_sum = 0;
  for (double w : weights) {
    const double scaled = std::ldexp(w, e);
    whole.push_back(static_cast<long long>(std::nearbyint(scaled)));
    remainder.push_back(scaled - static_cast<double>(whole.back()));
    scaled_sum += scaled;
    whole_sum += whole.back();
  }
  if (keep_sum) {
    const auto target = static_cast<long long>(std::nearbyint(scaled_sum));
    const long long step = target > whole_sum ? 1 : -1;
    std::vector<std::size_t> order(weights.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return remainder[a] * step > remainder[b] * step; });
    for (std::size_t i = 0; whole_sum != target && i < order.size(); ++i) {
      whole[order[i]] += step;
      remainder[order[i]] -= static_cast<double>(step);
      whole_sum += step;
    }
  }
  double quantization = 0.0;
  for (auto& d : split.digits) d.clear();
  for (std::size_t k = 0; k < weights.size(); ++k) {
    quantization += std::abs(remainder[k]);
    long long h = whole[k];
    for (auto& digits : split.digits) {
      const long long digit = ((h % 256) + 256 + 128) % 256 - 128;
      digits.push_back(static_cast<int>(digit));
      h = (h - digit) / 256;
    }
  }
  return quantization;
}

/// The split's scale for the largest weight (in (2^21, 2^22] after scaling); nullopt when every
/// weight is zero, one is not finite, the sizes disagree or 2^-exponent would leave float's range.
std::optional<DenseTensorSplit> dense_split_start(const std::vector<double>& weights, int kw, int kh,
                                                  std::size_t digits = 3) {
  double largest = 0.0;
  for (double w : weights) {
    if (!std::isfinite(w)) return std::nullopt;
    largest = std::max(largest, std::abs(w));
  }
  if (largest == 0.0 || kw < 1 || kh < 1 || static_cast<std::size_t>(kw) * kh != weights.size()) return std::nullopt;
  DenseTensorSplit split;
  split.digits.resize(digits);
  split.exponent = tensor_exponent(largest);
  if (split.exponent > 126 || split.exponent < -126) return std::nullopt;
  return split;
}

}  // namespace

std::optional<DenseTensorSplit> dense_tensor_split(const std::vector<double>& weights, int kw, int kh,
                                                   double delta) {
  std::optional<DenseTensorSplit> start = dense_split_start(weights, kw, kh);
  if (!start) return std::nullopt;
  DenseTensorSplit& split = *start;
  // 255 * sum (65536 |d2| + |d0 + 256 d1|): what the epilogue's two float FMAs may reach.
  const auto magnitude = [&] {
    double m = 0.0;
    for (std::size_t k = 0; k < weights.size(); ++k)
      m += 255.0 * (65536.0 * std::abs(split.digits[2][k]) + std::abs(split.digits[0][k] + 256.0 * split.digits[1][k]));
    return m;
  };
  // Weights that are multiples of 2^-e0, with delta a multiple too, whose sums stay within 2^24 at
  // the smallest such scale are summed exactly: every chain, both FMAs and the final scaling, so
  // ties round as the exact sum's.
  const auto integral_at = [&](int e) {
    return std::all_of(weights.begin(), weights.end(),
                       [e](double w) { return std::ldexp(w, e) == std::nearbyint(std::ldexp(w, e)); });
  };
  int e0 = -126;
  while (e0 < split.exponent && !integral_at(e0)) ++e0;
  const double delta0 = std::ldexp(delta, e0);
  if (integral_at(e0) && delta0 == std::nearbyint(delta0)) {
    to_digits(weights, e0, split);
    if (magnitude() + std::abs(delta0) <= 16777216.0) {
      split.exponent = e0;
      split.bound = 0.0;
      split.holds = true;
      return split;
    }
  }
  const double quantization = to_digits(weights, split.exponent, split);
  // The weights' rounding, then three float roundings: 256 d1-chain + d0-chain, 65536 d2-chain +
  // that, and sum * 2^-e + delta (the scaling itself exact), each within gamma of its magnitude.
  split.bound = 255.0 * std::ldexp(quantization, -split.exponent) +
                gamma(3) * (std::ldexp(magnitude(), -split.exponent) + std::abs(delta));
  split.holds = integer_results_hold(weights, delta, split.bound);
  return split;
}

std::optional<DenseTensorSplit> dense_tensor_split_float(const std::vector<double>& weights, int kw, int kh) {
  std::optional<DenseTensorSplit> start = dense_split_start(weights, kw, kh);
  if (!start) return std::nullopt;
  DenseTensorSplit& split = *start;
  const double quantization = std::ldexp(to_digits(weights, split.exponent, split), -split.exponent);
  // Per unit of the window's largest magnitude M, with pixels v = x 2^s rounded (M 2^s > 2^21):
  // each pixel's rounding 2^-22; the dropped products d0 x d0, d1 x d0 and d0 x d1 (pixel digit x
  // weight digit, |pixel digit| <= 128) 2^-(s+e) 128 (257 |d0| + 256 |d1|) < 2^-14 2^-e (...); the
  // chains' conversions and the epilogue's FMAs, 4 roundings of what the digit products reach:
  // sum (|d0| + 256 |d1| + 65536 |d2|) 2^-e times the pixels' digits, which pass |v| by at most
  // 2 (128 + 256 * 128) = 65792 (balanced digits), i.e. (1 + 65792 / 2^21) M.
  double weight_sum = 0.0;
  double scaled_sum = 0.0;
  double digit_sum = 0.0;
  double dropped = 0.0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const double d0 = split.digits[0][k];
    const double d1 = split.digits[1][k];
    const double d2 = split.digits[2][k];
    weight_sum += std::abs(weights[k]);
    scaled_sum += std::abs(d0 + 256.0 * d1 + 65536.0 * d2);
    digit_sum += std::abs(d0) + 256.0 * std::abs(d1) + 65536.0 * std::abs(d2);
    dropped += 257.0 * std::abs(d0) + 256.0 * std::abs(d1);
  }
  constexpr double kPixelDigits = 1.0 + 65792.0 / 2097152.0;
  const double per_m = quantization + std::ldexp(scaled_sum, -22 - split.exponent) +
                       std::ldexp(dropped, -14 - split.exponent) +
                       gamma(4) * kPixelDigits * std::ldexp(digit_sum, -split.exponent);
  // Relative to sum |w| M + |delta|, the 32F pass rule's scale.
  split.bound = per_m / weight_sum + gamma(4);
  split.holds = split.bound <= kDenseFloatErrorLimit;
  return split;
}

namespace {

/// Whether the 16-bit kernel rounds every flat area (all pixels of the window equal to v, any v
/// from 0 to 65535) as the exact sum does: the kernel's arithmetic emulated step for step (digit
/// chains of v's bytes times the digit sums, the double join, the scaling with the float delta).
/// With 65536 flat values, the bound alone would refuse most filters whose weights do not sum to
/// a simple fraction, though their flat areas round correctly (the weights' sum is kept to half a
/// unit, to_digits' keep_sum). Only values whose sum (in double) lies within the split's bound, and
/// that sum's own rounding, of a tie are emulated: elsewhere the kernel, within the bound of the
/// exact sum, rounds as it does.
bool u16_flat_areas_round_exactly(const DenseTensorSplit& split, const std::vector<double>& weights, double delta) {
  long long digit_sums[4] = {};
  for (std::size_t d = 0; d < 4; ++d)
    for (int digit : split.digits[d]) digit_sums[d] += digit;
  long double weight_sum = 0.0L;
  double weight_sum_d = 0.0;
  double magnitude = 0.0;
  for (double w : weights) {
    weight_sum += w;
    weight_sum_d += w;
    magnitude += std::abs(w);
  }
  const double margin = split.bound + std::ldexp(static_cast<double>(weights.size()) + 2.0, -52) *
                                          (65535.0 * magnitude + std::abs(delta));
  const double scale = std::ldexp(1.0, -split.exponent);
  const double float_delta = static_cast<float>(delta);
  const auto to_u16 = [](long double x) { return std::clamp(std::nearbyint(x), 0.0L, 65535.0L); };
  for (long long v = 0; v <= 65535; ++v) {
    const double approx = static_cast<double>(v) * weight_sum_d + delta;
    if (std::abs(approx - std::floor(approx) - 0.5) > margin) continue;
    const long long lo = v & 255;
    const long long hi = v >> 8;
    const long long chains[5] = {hi * digit_sums[3], hi * digit_sums[2] + lo * digit_sums[3],
                                 hi * digit_sums[1] + lo * digit_sums[2], hi * digit_sums[0] + lo * digit_sums[1],
                                 lo * digit_sums[0]};
    double sum = static_cast<double>(chains[0]);
    for (int c = 1; c < 5; ++c) sum = std::fma(sum, 256.0, static_cast<double>(chains[c]));
    const double got = std::fma(sum, scale, float_delta);
    if (to_u16(got) != to_u16(static_cast<long double>(v) * weight_sum + delta)) return false;
  }
  return true;
}

}  // namespace

std::optional<DenseTensorSplit> dense_tensor_split_u16(const std::vector<double>& weights, int kw, int kh,
                                                       double delta) {
  std::optional<DenseTensorSplit> start = dense_split_start(weights, kw, kh, 4);
  if (!start) return std::nullopt;
  DenseTensorSplit& split = *start;
  split.exponent += 8;  // the largest |H| in (2^29, 2^30]
  const double quantization =
      std::ldexp(to_digits(weights, split.exponent, split, /*keep_sum=*/true), -split.exponent);
  // In output units, for pixels up to 65535 (lo + 256 hi, both unsigned bytes): the weights'
  // rounding; the chains joined by four double FMAs and scaled with delta added in one more, 5
  // roundings of what the digit products reach (65535 sum (|d0| + 256 |d1| + 65536 |d2| + 2^24
  // |d3|) 2^-e + |delta|); delta itself reaches the kernel as a float.
  double digit_sum = 0.0;
  for (std::size_t k = 0; k < weights.size(); ++k)
    digit_sum += std::abs(split.digits[0][k]) + 256.0 * std::abs(split.digits[1][k]) +
                 65536.0 * std::abs(split.digits[2][k]) + 16777216.0 * std::abs(split.digits[3][k]);
  const double float_delta = static_cast<float>(delta);
  // Sums that may leave int's range are refused: filter2D's cvRound sends them to INT_MIN (the
  // lowest value) where the kernel saturates; `fast` keeps that rule.
  double weight_sum = 0.0;
  for (double w : weights) weight_sum += std::abs(w);
  if (65535.0 * weight_sum + std::abs(delta) + 1.0 >= 2147483648.0) {
    split.bound = 0.0;
    split.holds = false;
    return split;
  }
  // Weights that are multiples of 2^-e (nothing rounded) with delta a float multiple of it too,
  // and sums within 2^53 of that unit: every step is exact, so ties round as the exact sum's.
  const double delta_units = std::ldexp(delta, split.exponent);
  if (quantization == 0.0 && float_delta == delta && delta_units == std::nearbyint(delta_units) &&
      65535.0 * digit_sum + std::abs(delta_units) <= 9007199254740992.0) {
    split.bound = 0.0;
    split.holds = true;
    return split;
  }
  split.bound = 65535.0 * quantization + std::abs(float_delta - delta) +
                gamma(5, 53) * (65535.0 * std::ldexp(digit_sum, -split.exponent) + std::abs(delta));
  split.holds = split.bound <= kSeparableErrorLimit && u16_flat_areas_round_exactly(split, weights, delta);
  return split;
}

std::optional<DenseTensorSplit> dense_tensor_for(const std::vector<double>& weights, int kw, int kh, int input_depth,
                                                 int output_depth, double delta) {
  if (kw > kTensorDensePlanesMaxSide || kh > kTensorDensePlanesMaxSide) return std::nullopt;
  if (input_depth == CV_8U && output_depth == CV_8U) return dense_tensor_split(weights, kw, kh, delta);
  if (input_depth == CV_32F && output_depth == CV_32F) return dense_tensor_split_float(weights, kw, kh);
  if (input_depth == CV_16U && output_depth == CV_16U) return dense_tensor_split_u16(weights, kw, kh, delta);
  return std::nullopt;
}

double tensor_error_bound(const SeparableFactors& f, const TensorSplit& split, const std::vector<double>& weights,
                          double delta) {
  const FactorChange c = factor_change(f, weights);
  const double g = gamma(static_cast<int>(f.vertical.size()) + 1);
  return 255.0 * (c.factored + split.quantization * c.magnitude_v + g * c.magnitude_h * c.magnitude_v) +
         g * std::abs(delta);
}

bool exact_in_half(double v) {
  if (v == 0.0) return true;
  const double a = std::abs(v);
  if (!(a <= 65504.0)) return false;
  int e = 0;
  std::frexp(a, &e);                          // a in [2^(e-1), 2^e)
  const int last = std::max(e - 11, -24);     // weight of the last bit: 11 significant bits, or the subnormal grid
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
  const double magnitude_h = std::ldexp(split_magnitude(split), -split.exponent);  // the row sums are at most 255 times it
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
  const double floors = std::ldexp(1.0, -25) * r_unit * c.magnitude_v +
                        static_cast<double>(f.vertical.size()) * std::ldexp(1.0, -25) * std::ldexp(32768.0, -scales.tau) * r_unit;
  // Tensor cores: one high x high MMA a step (C = 0, or the cross sum, far below its products)
  // and two cross MMAs a step (products and C below 2^-10 of the sum).
  // (The high parts may exceed what they stand for by 2^-11: 1.001.)
  const double accumulation = 1.001 * (steps * 17.0 * 2.0 * u * 255.0 * magnitude_h * largest_v +
                                       2.0 * steps * 17.0 * 2.0 * u * std::ldexp(sum, -10));
  // The epilogue: the scale is exact; delta (as float) with one rounding of the sum.
  const double epilogue = u * (sum + std::abs(delta)) + std::abs(delta - static_cast<double>(static_cast<float>(delta)));
  return 255.0 * (c.factored + split.quantization * c.magnitude_v) + splits + floors + accumulation + epilogue;
}

std::optional<SeparableFactors> separable_for(const std::vector<double>& weights, int kw, int kh,
                                             int input_depth, int output_depth, double delta) {
  std::optional<SeparableFactors> factors = factor_separable(weights, kw, kh);
  if (!factors || output_depth == CV_32F) return factors;
  // 16-bit results: float keeps too few bits below the unit; double sums (fits_double_rank1) keep plenty.
  if (input_depth == CV_16U && output_depth == CV_16U) {
    factors->fits_float_rank1 = false;
    factors->fits_double_rank1 = integer_results_hold(weights, delta, wide_error_bound(*factors, weights, 65535.0, delta), 65535);
    return factors->fits_double_rank1 ? factors : std::nullopt;
  }
  // Inexact sums on other integer outputs: only 8-bit input, where float keeps 16 bits below the unit.
  if (input_depth != CV_8U) return std::nullopt;
  const std::optional<TensorSplit> split = tensor_split(factors->horizontal);
  if (factors->exact && all_short_dyadic(*factors)) {  // exact sums
    factors->fits_tensor_split = split && split->quantization == 0.0;
    return factors;
  }
  factors->fits_float_rank1 = integer_results_hold(weights, delta, separable_error_bound(*factors, weights, 255.0, delta));
  factors->fits_tensor_split = split && integer_results_hold(weights, delta, tensor_error_bound(*factors, *split, weights, delta));
  if (split && kh <= kTensorMmaMaxSide) {
    const std::optional<TensorMmaScales> scales = tensor_mma_scales(*split, factors->vertical);
    factors->fits_tensor_mma_split =
        scales && integer_results_hold(weights, delta, tensor_mma_error_bound(*factors, *split, *scales, weights, delta));
  }
  if (!factors->fits_float_rank1 && !factors->fits_tensor_split && !factors->fits_tensor_mma_split) return std::nullopt;
  return factors;
}

namespace {

std::atomic<std::uint64_t> split_computations{0};

}  // namespace

FilterSplits filter_splits(const std::vector<double>& weights, int kw, int kh, int input_depth, int output_depth,
                           double delta) {
  // This thread's recent answers, least recently used first (as launch_fft.cu keeps its plans and
  // filter spectra): a batch's worker threads each work a filter out once.
  struct Entry {
    std::vector<double> weights;
    int kw, kh, input_depth, output_depth;
    double delta;
    FilterSplits splits;
  };
  thread_local std::vector<Entry> recent;
  const auto found = std::find_if(recent.begin(), recent.end(), [&](const Entry& e) {
    return e.kw == kw && e.kh == kh && e.input_depth == input_depth && e.output_depth == output_depth &&
           std::memcmp(&e.delta, &delta, sizeof delta) == 0 && e.weights.size() == weights.size() &&
           std::memcmp(e.weights.data(), weights.data(), sizeof(double) * weights.size()) == 0;
  });
  if (found != recent.end()) {
    std::rotate(found, found + 1, recent.end());  // now the most recently used
    return recent.back().splits;
  }
  if (recent.size() == kFilterSplitsKept) recent.erase(recent.begin());
  recent.push_back({weights, kw, kh, input_depth, output_depth, delta,
                    {separable_for(weights, kw, kh, input_depth, output_depth, delta),
                     dense_tensor_for(weights, kw, kh, input_depth, output_depth, delta)}});
  split_computations.fetch_add(1, std::memory_order_relaxed);
  return recent.back().splits;
}

std::uint64_t filter_split_computations() noexcept { return split_computations.load(std::memory_order_relaxed); }

}  // namespace cuconv::detail
