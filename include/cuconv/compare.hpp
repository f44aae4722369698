#pragma once
/// @file compare.hpp
/// How close a result is to the cv::filter2D reference, and the pass rule (README "Accuracy"):
///  - integer outputs: max |difference| <= 1 and at most 0.1% of values differ (filter2D itself
///    switches to a DFT for large filters, whose rounding differs from a direct sum);
///  - float outputs: max |difference| / (sum|k| * max|x| + |delta|) <= 1e-5, where max|x| also
///    covers the constant border value.
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core/mat.hpp>

#include <cstddef>

namespace cuconv {

inline constexpr double kMaxIntegerDifference = 1.0;
inline constexpr double kMaxDifferingFraction = 0.001;
inline constexpr double kMaxRelativeError = 1e-5;
/// `fft` on integer outputs: still at most 1 off, but on up to 10% of values. Its rounding,
/// relative to the tile's range, tips the exact ties of dyadic filters and, for 16-bit data,
/// values near a tie (bench/results/kernel-notes/fft.md, 'Accuracy', has the measured share). Where the margin
/// of src/gpu/launch/fft_ties.hpp is on (8-bit outputs of usual filters) `fft` sums results near a
/// tie again, and `auto` picks it only there.
inline constexpr double kFftMaxDifferingFraction = 0.10;

/// The integer rule's share of values allowed to differ by 1 for results of `variant`.
[[nodiscard]] constexpr double max_differing_fraction_for(Variant variant) noexcept {
  return variant == Variant::fft ? kFftMaxDifferingFraction : kMaxDifferingFraction;
}

struct ComparisonStats {
  double max_abs_difference = 0;   ///< NaN against a number counts as infinite
  std::size_t differing_values = 0;  ///< pixel channels that are not equal
  std::size_t total_values = 0;
  double differing_percent = 0;
  double relative_error = 0;       ///< max |difference| over the normaliser above
  bool float_output = false;
  double max_differing_fraction = 0;  ///< the integer rule applied (compare_to_reference's argument)
  std::size_t exact_where_reference_differs = 0;  ///< values equal to the exact sum, not the reference
  bool within_tolerance = false;
};

/// Whether results of this output depth are also compared with the exact sum: 16-bit integers,
/// where filter2D's float sums keep too few bits below the unit and round to another integer than
/// the exact sum on a share of values that grows with the filter (docs/design.md "Accuracy"; the
/// double-precision separable path of `fast` gives the exact one's).
[[nodiscard]] constexpr bool compares_with_exact_sum(int output_depth) noexcept {
  return output_depth == CV_16U || output_depth == CV_16S;
}

/// Compares `result` with `reference` (same size, type). `input`, `filter`, `delta` and
/// `border_value` give the normaliser of the float rule; `max_differing_fraction` is the integer
/// rule's share of values allowed to differ by 1. `exact` (integer outputs; OpenCvMethod::exact_sum):
/// a value equal to it is correct whatever the reference says, so it is not counted as differing
/// (exact_where_reference_differs counts those).
[[nodiscard]] ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference,
                                                   const cv::Mat& input, const Filter& filter,
                                                   double delta, double border_value = 0.0,
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
