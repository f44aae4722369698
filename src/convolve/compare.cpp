#include <cuconv/compare.hpp>
#include <cuconv/error.hpp>

#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cuconv {

ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference,
                                     const cv::Mat& input, const Filter& filter, double delta,
                                     double border_value, double max_differing_fraction, const cv::Mat* exact) {
  if (result.size() != reference.size() || result.type() != reference.type())
    throw Error(ErrorKind::internal, "compare_to_reference: result and reference differ in size or type");
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
      const bool nan_a = std::isnan(pa[c]);
      const bool nan_b = std::isnan(pb[c]);
      double diff = 0;
      if (nan_a != nan_b) diff = std::numeric_limits<double>::infinity();
      else if (!nan_a && pa[c] != pb[c]) diff = std::abs(pa[c] - pb[c]);
      if (diff > 0 && pe != nullptr && pa[c] == pe[c]) {  // the exact sum's value: correct
        ++stats.exact_where_reference_differs;
        continue;
      }
      if (diff > 0 || (nan_a != nan_b)) ++stats.differing_values;
      stats.max_abs_difference = std::max(stats.max_abs_difference, diff);
    }
  }
  stats.differing_percent =
      stats.total_values == 0 ? 0.0 : 100.0 * static_cast<double>(stats.differing_values) / static_cast<double>(stats.total_values);

  double max_input = 0;
  cv::minMaxLoc(cv::abs(input.reshape(1)), nullptr, &max_input);
  max_input = std::max(max_input, std::abs(border_value));
  double weight_sum = 0;
  for (double w : filter.weights) weight_sum += std::abs(w);
  const double normaliser = weight_sum * max_input + std::abs(delta + filter.offset);
  stats.relative_error = stats.max_abs_difference / (normaliser > 0 ? normaliser : 1.0);

  stats.float_output = result.depth() == CV_32F || result.depth() == CV_64F;
  stats.max_differing_fraction = max_differing_fraction;
  if (stats.float_output) {
    stats.within_tolerance = stats.relative_error <= kMaxRelativeError;
  } else {
    const auto allowed = static_cast<std::size_t>(
        std::ceil(max_differing_fraction * static_cast<double>(stats.total_values)));
    stats.within_tolerance =
        stats.max_abs_difference <= kMaxIntegerDifference && stats.differing_values <= allowed;
  }
  return stats;
}

ReferenceCheck check_against_reference(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                                      const cv::Mat& result, Variant variant_used) {
  ConvolveOptions reference_options = options;
  reference_options.variant = Variant::opencv;
  reference_options.opencv_method = OpenCvMethod::reference;  // no DFT rounding noise
  const ConvolveResult reference = convolve(src, filter, reference_options);
  // 16-bit results: a value equal to the exact sum (filter2D in double) is correct where
  // filter2D's float sum rounds the other way.
  cv::Mat exact;
  if (compares_with_exact_sum(result.depth())) {
    reference_options.opencv_method = OpenCvMethod::exact_sum;
    exact = convolve(src, filter, reference_options).image;
  }
  ReferenceCheck check;
  check.stats = compare_to_reference(result, reference.image, src, filter, options.delta,
                                     options.border == Border::constant ? options.border_value : 0.0,
                                     max_differing_fraction_for(variant_used), exact.empty() ? nullptr : &exact);
  check.reference_kernel_ms = reference.times.kernel_ms;
  return check;
}

}  // namespace cuconv
