// SPDX-License-Identifier: Apache-2.0
// The pass rule (include/cuconv/compare.hpp): a result against filter2D's direct sum, each
// output judged by its own footprint (the float rule's scale, the exact sum of integer outputs),
// non-finite values matched exactly.
#include <cuconv/compare.hpp>
#include <cuconv/error.hpp>

#include "common/opencv_border.hpp"
#include "convolve/cpu_reference.hpp"  // stored_border_value

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace cuconv {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

void check_shapes(const cv::Mat& result, const cv::Mat& reference) {
  if (result.size() != reference.size() || result.type() != reference.type())
    throw Error(ErrorKind::internal, "compare_to_reference: result and reference differ in size or type");
}

double depth_range(int depth) {
  switch (depth) {
    case CV_8U: return 255.0;
    case CV_16U: return 65535.0;
    case CV_16S: return 32768.0;
    default: return 0.0;
  }
}

double saturate(double v, int depth) {
  switch (depth) {
    case CV_8U: return std::clamp(v, 0.0, 255.0);
    case CV_16U: return std::clamp(v, 0.0, 65535.0);
    case CV_16S: return std::clamp(v, -32768.0, 32767.0);
    default: return v;
  }
}

/// Whether `a` and `b` are the same non-finite value (NaN and NaN, or equal infinities).
bool same_non_finite(double a, double b) { return std::isnan(a) ? std::isnan(b) : a == b; }

/// The correlation of `image` (CV_64F, its channels) with `kernel` (CV_64F) plus `delta`, each
/// output over its footprint through `border` (`border_value` for the constant rule), summed
/// directly in double: filter2D on a view inside the padded image (off offset (0, 0), so never
/// its DFT path; the view's neighbours are the padding).
cv::Mat footprint_sums(const cv::Mat& image, const cv::Mat& kernel, int anchor_x, int anchor_y, Border border,
                       double border_value, double delta) {
  const int top = anchor_y + 1;
  const int left = anchor_x + 1;
  cv::Mat padded;
  cv::copyMakeBorder(image, padded, top, kernel.rows - 1 - anchor_y, left, kernel.cols - 1 - anchor_x,
                     common::opencv_border(border) | cv::BORDER_ISOLATED, cv::Scalar::all(border_value));
  const cv::Mat view = padded(cv::Rect(left, top, image.cols, image.rows));
  cv::Mat sums;
  cv::filter2D(view, sums, CV_64F, kernel, cv::Point(anchor_x, anchor_y), delta, cv::BORDER_CONSTANT);
  return sums;
}

/// The float rule at one value: |have - want| over the footprint's `scale`; infinite for a
/// non-finite value where a finite one is due (or the reverse), 0 for the same non-finite value.
double float_error(double have, double want, double scale, std::size_t& non_finite_mismatches) {
  if (!std::isfinite(want) || !std::isfinite(have)) {
    if (same_non_finite(have, want)) return 0.0;
    ++non_finite_mismatches;
    return kInfinity;
  }
  const double diff = std::abs(have - want);
  if (diff == 0.0) return 0.0;
  return scale > 0.0 && std::isfinite(scale) ? diff / scale : kInfinity;
}

}  // namespace

double fft_tie_band(int input_depth, int output_depth, const Filter& filter) noexcept {
  double abs_sum = 0.0;
  for (double w : filter.weights) abs_sum += std::abs(w);
  return kFftRelativeErrorBound * depth_range(input_depth) * abs_sum +
         (depth_range(output_depth) + 1.0) / 4194304.0;
}

ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference, const cv::Mat& input,
                                     const Filter& filter, const ConvolveOptions& options, Variant result_variant) {
  check_shapes(result, reference);
  if (input.size() != result.size() || input.channels() != result.channels())
    throw Error(ErrorKind::internal, "compare_to_reference: the input differs from the result in size or channels");
  const int anchor_x = options.anchor_x >= 0 ? options.anchor_x : filter.resolved_anchor_x();
  const int anchor_y = options.anchor_y >= 0 ? options.anchor_y : filter.resolved_anchor_y();
  const double delta = options.delta + filter.offset;
  // The value every variant pads with (saturated to the input type), not the option's: with the
  // option's 901.25 around a 16-bit image the exact sum would judge right values as wrong.
  const double border_value =
      options.border == Border::constant ? convolution::stored_border_value(options.border_value, input.depth()) : 0.0;
  const int channels = input.channels();
  const bool keep_alpha = options.keep_alpha && channels == 4;

  cv::Mat kernel(filter.height, filter.width, CV_64F);
  for (int i = 0; i < filter.height; ++i)
    for (int j = 0; j < filter.width; ++j) kernel.at<double>(i, j) = filter.at(i, j);
  cv::Mat wide;
  input.convertTo(wide, CV_MAKETYPE(CV_64F, channels));

  ComparisonStats stats;
  stats.float_output = result.depth() == CV_32F || result.depth() == CV_64F;
  // Integer outputs: the exact sum; float outputs: each footprint's sum|k| |x| + |delta|.
  cv::Mat per_value;
  if (stats.float_output) {
    per_value = footprint_sums(cv::abs(wide), cv::abs(kernel), anchor_x, anchor_y, options.border,
                               std::abs(border_value), std::abs(delta));
  } else {
    per_value = footprint_sums(wide, kernel, anchor_x, anchor_y, options.border, border_value, delta);
  }
  if (stats.float_output) {
    const double floor = float_rule_floor(input, filter, options.delta, border_value, result_variant);
    if (floor > 0.0) cv::max(per_value, cv::Scalar::all(floor), per_value);
  }
  if (keep_alpha) {  // alpha passes through: its value (float rule: its magnitude) is due
    std::vector<cv::Mat> planes;
    cv::split(per_value, planes);
    cv::extractChannel(wide, planes[3], 3);
    if (stats.float_output) planes[3] = cv::abs(planes[3]);
    cv::merge(planes, per_value);
  }

  const bool repairs_off = result_variant == Variant::fft && !stats.float_output &&
                           !(fft_tie_band(input.depth(), result.depth(), filter) <= kFftMaxRepairedMargin);
  stats.tie_band = repairs_off ? fft_tie_band(input.depth(), result.depth(), filter) : 0.0;
  stats.max_differing_fraction = stats.float_output || repairs_off ? 0.0 : kMaxDifferingFraction;

  cv::Mat a, b;
  result.reshape(1).convertTo(a, CV_64F);
  reference.reshape(1).convertTo(b, CV_64F);
  const cv::Mat s = per_value.reshape(1);
  stats.total_values = a.total();
  std::size_t unexplained = 0;  // integer values off from both, not within the tie band
  for (int r = 0; r < a.rows; ++r) {
    const double* pa = a.ptr<double>(r);
    const double* pb = b.ptr<double>(r);
    const double* ps = s.ptr<double>(r);
    for (int c = 0; c < a.cols; ++c) {
      const double have = pa[c];
      const double want = pb[c];
      if (stats.float_output) {
        const double error = float_error(have, want, std::abs(ps[c]), stats.non_finite_mismatches);
        stats.relative_error = std::max(stats.relative_error, error);
        if (have != want && !same_non_finite(have, want)) {
          ++stats.differing_values;
          const double diff = std::isfinite(have) && std::isfinite(want) ? std::abs(have - want) : kInfinity;
          stats.max_abs_difference = std::max(stats.max_abs_difference, diff);
        }
        continue;
      }
      if (have == want) continue;
      const double exact = saturate(std::nearbyint(ps[c]), result.depth());
      if (have == exact) {  // the exact sum's value: correct whatever filter2D's float sum gave
        ++stats.exact_where_reference_differs;
        continue;
      }
      ++stats.differing_values;
      stats.max_abs_difference = std::max(stats.max_abs_difference, std::abs(have - want));
      const double tie = std::floor(ps[c]) + 0.5;
      const bool near_tie = std::abs(have - exact) == 1.0 && std::abs(ps[c] - tie) <= stats.tie_band &&
                            (have == saturate(std::floor(ps[c]), result.depth()) ||
                             have == saturate(std::ceil(ps[c]), result.depth()));
      if (repairs_off && near_tie)
        ++stats.off_by_one_near_tie;
      else
        ++unexplained;
    }
  }
  stats.differing_percent = stats.total_values == 0 ? 0.0
                                                    : 100.0 * static_cast<double>(stats.differing_values) /
                                                          static_cast<double>(stats.total_values);
  if (stats.float_output) {
    stats.within_tolerance = stats.relative_error <= float_rule_bound(static_cast<long long>(filter.width) * filter.height);
  } else {
    const auto allowed =
        static_cast<std::size_t>(std::floor(stats.max_differing_fraction * static_cast<double>(stats.total_values)));
    stats.within_tolerance = stats.max_abs_difference <= kMaxIntegerDifference && unexplained <= allowed;
  }
  return stats;
}

ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference,
                                     const cv::Mat& input, const Filter& filter, double delta,
                                     double border_value, double max_differing_fraction, const cv::Mat* exact) {
  check_shapes(result, reference);
  if (exact != nullptr && (exact->size() != result.size() || exact->type() != result.type()))
    throw Error(ErrorKind::internal, "compare_to_reference: the exact sum differs from the result in size or type");
  cv::Mat a, b, e;
  result.reshape(1).convertTo(a, CV_64F);
  reference.reshape(1).convertTo(b, CV_64F);
  if (exact != nullptr) exact->reshape(1).convertTo(e, CV_64F);

  ComparisonStats stats;
  stats.total_values = a.total();
  for (int r = 0; r < a.rows; ++r) {
    const double* pa = a.ptr<double>(r);
    const double* pb = b.ptr<double>(r);
    const double* pe = exact != nullptr ? e.ptr<double>(r) : nullptr;
    for (int c = 0; c < a.cols; ++c) {
      if (pa[c] == pb[c] || same_non_finite(pa[c], pb[c])) continue;
      double diff = kInfinity;
      if (std::isfinite(pa[c]) && std::isfinite(pb[c])) {
        diff = std::abs(pa[c] - pb[c]);
      } else {
        ++stats.non_finite_mismatches;
      }
      if (pe != nullptr && pa[c] == pe[c]) {  // the exact sum's value: correct
        ++stats.exact_where_reference_differs;
        continue;
      }
      ++stats.differing_values;
      stats.max_abs_difference = std::max(stats.max_abs_difference, diff);
    }
  }
  stats.differing_percent =
      stats.total_values == 0 ? 0.0 : 100.0 * static_cast<double>(stats.differing_values) / static_cast<double>(stats.total_values);

  // The global scale over the finite inputs: an infinity among them would make every error 0.
  double max_input = std::abs(border_value);
  cv::Mat flat;
  input.reshape(1).convertTo(flat, CV_64F);
  for (auto it = flat.begin<double>(); it != flat.end<double>(); ++it)
    if (std::isfinite(*it)) max_input = std::max(max_input, std::abs(*it));
  double weight_sum = 0;
  for (double w : filter.weights) weight_sum += std::abs(w);
  const double normaliser = weight_sum * max_input + std::abs(delta + filter.offset);
  stats.relative_error = stats.max_abs_difference == 0.0 ? 0.0
                         : normaliser > 0.0               ? stats.max_abs_difference / normaliser
                                                          : kInfinity;

  stats.float_output = result.depth() == CV_32F || result.depth() == CV_64F;
  stats.max_differing_fraction = max_differing_fraction;
  if (stats.float_output) {
    stats.within_tolerance = stats.relative_error <= kMaxRelativeError;
  } else {
    const auto allowed = static_cast<std::size_t>(
        std::floor(max_differing_fraction * static_cast<double>(stats.total_values)));
    stats.within_tolerance =
        stats.max_abs_difference <= kMaxIntegerDifference && stats.differing_values <= allowed;
  }
  return stats;
}

double float_rule_floor(const cv::Mat& input, const Filter& filter, double delta, double border_value,
                        Variant variant) {
  if (variant != Variant::fft && variant != Variant::tensor) return 0.0;
  double sum_abs = 0.0;
  for (const double w : filter.weights) sum_abs += std::abs(w);
  double largest = std::abs(border_value);
  const cv::Mat flat = input.reshape(1);
  for (int r = 0; r < flat.rows; ++r)
    for (int c = 0; c < flat.cols; ++c) {
      double v = 0.0;
      switch (flat.depth()) {
        case CV_8U: v = flat.at<std::uint8_t>(r, c); break;
        case CV_16U: v = flat.at<std::uint16_t>(r, c); break;
        case CV_16S: v = flat.at<std::int16_t>(r, c); break;
        case CV_32F: v = flat.at<float>(r, c); break;
        default: v = flat.at<double>(r, c); break;
      }
      if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
    }
  return sum_abs * largest + std::abs(delta + filter.offset);
}

ReferenceCheck check_against_reference(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                                      const cv::Mat& result, Variant variant_used) {
  ConvolveOptions reference_options = options;
  reference_options.variant = Variant::opencv;
  reference_options.opencv_method = OpenCvMethod::reference;  // no DFT rounding noise
  const ConvolveResult reference = convolve(src, filter, reference_options);
  // Each output judged by its own footprint (the float rule's scale, the exact sum for integers).
  ReferenceCheck check;
  check.stats = compare_to_reference(result, reference.image, src, filter, options, variant_used);
  check.reference_kernel_ms = reference.times.kernel_ms;
  return check;
}

}  // namespace cuconv
