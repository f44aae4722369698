// SPDX-License-Identifier: Apache-2.0
// Dense filters as `tensor`'s dense kernels feed them to byte MMAs: the weights as signed
// base-256 digits for 8-bit, float and 16-bit images, with the error bound of each kernel's
// arithmetic, which decides dense_tensor_for.
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

std::optional<DenseTensorSplit> dense_tensor_split(const std::vector<double>& weights, int kw, int kh, double delta) {
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
                gamma_n(3) * (std::ldexp(magnitude(), -split.exponent) + std::abs(delta));
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
                       gamma_n(4) * kPixelDigits * std::ldexp(digit_sum, -split.exponent);
  // Relative to sum |w| M + |delta|, the 32F pass rule's scale.
  split.bound = per_m / weight_sum + gamma_n(4);
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
  const double quantization = std::ldexp(to_digits(weights, split.exponent, split, /*keep_sum=*/true), -split.exponent);
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
                gamma_n(5, 53) * (65535.0 * std::ldexp(digit_sum, -split.exponent) + std::abs(delta));
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

}  // namespace cuconv::filter
