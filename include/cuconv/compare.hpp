// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file compare.hpp
/// How close a result is to the cv::filter2D reference, and the pass rule (docs/design.md
/// "Accuracy"), in compare_to_reference's overload that takes the run's ConvolveOptions:
///  - integer outputs: max |difference| <= 1 and at most 0.1% of the values (rounded down: none
///    on an image of fewer than 1000 values) differ from both the reference and the exact sum;
///    `fft` without its tie repairs: each value off by one lies within fft_tie_band of a rounding
///    tie of the exact sum (the transform's stated error), no other value may differ, and
///    at most kFftMaxDifferingFraction of the values off by one (the band reaches 1/2 once
///    sum|w| passes about 3.9 on 16-bit input, and then tells no tie apart);
///  - float outputs: at every value, |difference| <= float_rule_bound (1e-5, or gamma_n of the
///    filter's taps) x (sum|k| |x| over that output's own footprint, through the border rule, +
///    |delta|; for `tensor` and `fft` the block's or tile's scale, float_rule_block_scales); a NaN
///    or an infinity where the reference is finite (or a finite value where it is not) fails.
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core/mat.hpp>

#include <cstddef>

namespace cuconv {

inline constexpr double kMaxIntegerDifference = 1.0;
inline constexpr double kMaxDifferingFraction = 0.001;
inline constexpr double kMaxRelativeError = 1e-5;

/// The 32F rule's relative bound for a filter of `taps` weights: kMaxRelativeError, or where a
/// float sum of that many terms may round more, its bound gamma_n = n u / (1 - n u) (u = 2^-24,
/// any summation order): a correct float kernel stays within it at every value.
[[nodiscard]] constexpr double float_rule_bound(long long taps) noexcept {
  const double nu = static_cast<double>(taps) / 16777216.0;
  const double gamma = nu < 1.0 ? nu / (1.0 - nu) : 1.0;
  return gamma > kMaxRelativeError ? gamma : kMaxRelativeError;
}

/// The scale 32F values of `variant` are judged against where it rounds relative to more than
/// each output's own footprint: `tensor`'s float kernel scales each block of at most 128 x 128
/// outputs by its window's largest magnitude M, and `fft` transforms tiles, its error relative to
/// the tile's. At each output: sum|k| x M + |delta|, M the largest finite |x| (through the border
/// rule) of every window a block or tile holding that output can read, so a block's window
/// (`tensor` with a constant border: at least |border_value|, as its kernel counts it); the
/// result has `input`'s channels, in CV_64F. Empty for the variants that sum each footprint.
[[nodiscard]] cv::Mat float_rule_block_scales(const cv::Mat& input, const Filter& filter, int anchor_x, int anchor_y,
                                              Border border, double border_value, double delta, Variant variant);
/// `fft` on integer outputs, in the overload without the run's options only (its window and
/// exact sum unknown): still at most 1 off, but on up to 10% of values. Its rounding relative
/// to the tile's range tips the exact ties of dyadic filters and, for 16-bit data, values near a
/// tie (bench/results/kernel-notes/fft.md, 'Accuracy',
/// has the measured share). Where the margin of src/gpu/launch/fft_ties.hpp is on (8-bit outputs
/// of usual filters) `fft` sums results near a tie again, and `auto` picks it only there.
inline constexpr double kFftMaxDifferingFraction = 0.10;

/// `fft`'s error on integer outputs relative to (input range x sum|w|), as the product's tie
/// margin assumes it (src/gpu/launch/fft_ties.hpp, kFftRelativeError: 2^-19, eight times the
/// largest error measured), and the margin above which `fft` does not sum ties again.
inline constexpr double kFftRelativeErrorBound = 1.0 / 524288.0;
inline constexpr double kFftMaxRepairedMargin = 0.005;

/// The band around a rounding tie (n + 1/2) within which `fft` may round an integer result
/// either way: kFftRelativeErrorBound x (input depth's range) x sum|w|, plus 2^-22 x (output
/// range) for the float addition of delta and the spacing of floats near the largest outputs.
[[nodiscard]] double fft_tie_band(int input_depth, int output_depth, const Filter& filter) noexcept;

/// The integer rule's share of values allowed to differ by 1 for results of `variant` (the
/// overload without the run's options).
[[nodiscard]] constexpr double max_differing_fraction_for(Variant variant) noexcept {
  return variant == Variant::fft ? kFftMaxDifferingFraction : kMaxDifferingFraction;
}

struct ComparisonStats {
  double max_abs_difference = 0;     ///< NaN against a number counts as infinite
  std::size_t differing_values = 0;  ///< pixel channels that are not equal
  std::size_t total_values = 0;
  double differing_percent = 0;
  double relative_error = 0;  ///< max |difference| over the normaliser above
  bool float_output = false;
  double max_differing_fraction = 0;              ///< the integer rule applied (compare_to_reference's argument)
  std::size_t exact_where_reference_differs = 0;  ///< values equal to the exact sum, not the reference
  /// `fft` without tie repairs: the band of fft_tie_band applied (0: the 0.1% share applied), and
  /// the differing values off by one within it of a tie of the exact sum (allowed).
  double tie_band = 0;
  std::size_t off_by_one_near_tie = 0;
  std::size_t non_finite_mismatches = 0;  ///< NaN or infinity against a finite value, or the reverse
  bool within_tolerance = false;
};

/// Whether results of this output depth are also compared with the exact sum: 16-bit integers,
/// where filter2D's float sums keep too few bits below the unit and round to another integer than
/// the exact sum on a share of values that grows with the filter (docs/design.md "Accuracy"; the
/// double-precision separable path of `fast` gives the exact one's).
[[nodiscard]] constexpr bool compares_with_exact_sum(int output_depth) noexcept {
  return output_depth == CV_16U || output_depth == CV_16S;
}

/// The pass rule for `result` (filtered from `input` with `filter` under `options`, by
/// `result_variant`) against `reference` (filter2D's direct sum, same size and type). The run's
/// anchor, border rule, border value, delta, the filter's offset and --alpha keep give each output
/// its footprint: the float rule's scale and the exact sum (double, rounded half to even once),
/// which integer values may equal instead of the reference. Throws Error{internal} on mismatched
/// images.
[[nodiscard]] ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference,
                                                   const cv::Mat& input, const Filter& filter,
                                                   const ConvolveOptions& options, Variant result_variant);

/// The rule without the run's window (anchor and border unknown): the float rule scales every
/// value by one global sum|k| x max|x| + |delta| (max|x| over the finite inputs and the border
/// value), and `max_differing_fraction` of the values (rounded down) may differ by 1. Prefer the
/// overload above, which judges each output by its own footprint.
/// Compares `result` with `reference` (same size, type). `input`, `filter`, `delta` and
/// `border_value` give the normaliser of the float rule; `max_differing_fraction` is the integer
/// rule's share of values allowed to differ by 1. `exact` (integer outputs; OpenCvMethod::exact_sum):
/// a value equal to it is correct whatever the reference says, so it is not counted as differing
/// (exact_where_reference_differs counts those).
[[nodiscard]] ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference,
                                                   const cv::Mat& input, const Filter& filter, double delta,
                                                   double border_value = 0.0,
                                                   double max_differing_fraction = kMaxDifferingFraction,
                                                   const cv::Mat* exact = nullptr);

/// A result checked against OpenCV (what --compare reports), and the reference's own filter time.
struct ReferenceCheck {
  ComparisonStats stats;
  double reference_kernel_ms = 0;
};

/// Checks `result`, made from `src` with `filter` and `options` by `variant_used`, against
/// OpenCV's direct sums of the same request (OpenCvMethod::reference; for 16-bit outputs the exact
/// sum as well), under the pass rule for that variant: --compare's check, callable on any result.
[[nodiscard]] ReferenceCheck check_against_reference(const cv::Mat& src, const Filter& filter,
                                                     const ConvolveOptions& options, const cv::Mat& result,
                                                     Variant variant_used);

}  // namespace cuconv
