// SPDX-License-Identifier: Apache-2.0
// The pass rule (include/cuconv/compare.hpp): a result against filter2D's direct sum, each
// output judged by its own footprint (the float rule's scale, the exact sum of integer outputs),
// non-finite values matched exactly.
#include <cuconv/compare.hpp>
#include <cuconv/error.hpp>

#include "common/opencv_border.hpp"
#include "convolve/cpu_reference.hpp"  // stored_border_value
#include "gpu/launch/launch.hpp"       // fft_tile_side

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
    case CV_8U:
      return 255.0;
    case CV_16U:
      return 65535.0;
    case CV_16S:
      return 32768.0;
    default:
      return 0.0;
  }
}

double saturate(double v, int depth) {
  switch (depth) {
    case CV_8U:
      return std::clamp(v, 0.0, 255.0);
    case CV_16U:
      return std::clamp(v, 0.0, 65535.0);
    case CV_16S:
      return std::clamp(v, -32768.0, 32767.0);
    default:
      return v;
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

/// The outputs `tensor`'s float kernel gives one scale: a block of 128 columns
/// (kernels/tensor_dense_planes.cuh, kDensePlanesPixels) and one strip of 32, 64 or 128 rows
/// (strip_rows_for_waves), so at most 128 x 128.
constexpr int kTensorFloatBlock = 128;

/// Each row's running maximum over `width` values: out(r, c) = max of m(r, c .. c + width - 1)
/// (CV_64F, one channel; van Herk / Gil-Werman, three passes whatever the width).
cv::Mat running_max_rows(const cv::Mat& m, int width) {
  const int cols = m.cols - width + 1;
  cv::Mat out(m.rows, cols, CV_64F);
  std::vector<double> ahead(static_cast<std::size_t>(m.cols));
  std::vector<double> behind(static_cast<std::size_t>(m.cols));
  for (int r = 0; r < m.rows; ++r) {
    const double* in = m.ptr<double>(r);
    for (int c = 0; c < m.cols; ++c)  // the maximum from its segment's start up to c
      ahead[c] = c % width == 0 ? in[c] : std::max(ahead[c - 1], in[c]);
    for (int c = m.cols - 1; c >= 0; --c)  // ... from c up to its segment's end
      behind[c] = c % width == width - 1 || c == m.cols - 1 ? in[c] : std::max(behind[c + 1], in[c]);
    double* o = out.ptr<double>(r);
    for (int c = 0; c < cols; ++c) o[c] = std::max(behind[c], ahead[c + width - 1]);
  }
  return out;
}

}  // namespace

double fft_tie_band(int input_depth, int output_depth, const Filter& filter) noexcept {
  double abs_sum = 0.0;
  for (double w : filter.weights) abs_sum += std::abs(w);
  return kFftRelativeErrorBound * depth_range(input_depth) * abs_sum + (depth_range(output_depth) + 1.0) / 4194304.0;
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
    const cv::Mat blocks =
        float_rule_block_scales(input, filter, anchor_x, anchor_y, options.border, border_value, delta, result_variant);
    if (!blocks.empty()) cv::max(per_value, blocks, per_value);
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
      const bool near_tie =
          std::abs(have - exact) == 1.0 && std::abs(ps[c] - tie) <= stats.tie_band &&
          (have == saturate(std::floor(ps[c]), result.depth()) || have == saturate(std::ceil(ps[c]), result.depth()));
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
    stats.within_tolerance =
        stats.relative_error <= float_rule_bound(static_cast<long long>(filter.width) * filter.height);
  } else {
    const auto allowed =
        static_cast<std::size_t>(std::floor(stats.max_differing_fraction * static_cast<double>(stats.total_values)));
    // fft without repairs: the band alone passes any off-by-one once it reaches 1/2 (16-bit input,
    // sum|w| from about 3.9); the transform's errors tip a small share (5.6% measured at most),
    // a truncation about half of the values.
    const auto near_tie_allowed =
        static_cast<std::size_t>(std::floor(kFftMaxDifferingFraction * static_cast<double>(stats.total_values)));
    stats.within_tolerance = stats.max_abs_difference <= kMaxIntegerDifference && unexplained <= allowed &&
                             (!repairs_off || stats.off_by_one_near_tie <= near_tie_allowed);
  }
  return stats;
}

ComparisonStats compare_to_reference(const cv::Mat& result, const cv::Mat& reference, const cv::Mat& input,
                                     const Filter& filter, double delta, double border_value,
                                     double max_differing_fraction, const cv::Mat* exact) {
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
  stats.differing_percent = stats.total_values == 0 ? 0.0
                                                    : 100.0 * static_cast<double>(stats.differing_values) /
                                                          static_cast<double>(stats.total_values);

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
                         : normaliser > 0.0              ? stats.max_abs_difference / normaliser
                                                         : kInfinity;

  stats.float_output = result.depth() == CV_32F || result.depth() == CV_64F;
  stats.max_differing_fraction = max_differing_fraction;
  if (stats.float_output) {
    stats.within_tolerance = stats.relative_error <= kMaxRelativeError;
  } else {
    const auto allowed =
        static_cast<std::size_t>(std::floor(max_differing_fraction * static_cast<double>(stats.total_values)));
    stats.within_tolerance = stats.max_abs_difference <= kMaxIntegerDifference && stats.differing_values <= allowed;
  }
  return stats;
}

cv::Mat float_rule_block_scales(const cv::Mat& input, const Filter& filter, int anchor_x, int anchor_y, Border border,
                                double border_value, double delta, Variant variant) {
  // Outputs one block or tile holds along each axis: `tensor`'s 128, `fft`'s valid part of a tile
  // (the whole image's tile side; a strip's is never larger).
  int block_x = 0;
  int block_y = 0;
  if (variant == Variant::tensor) {
    block_x = block_y = kTensorFloatBlock;
  } else if (variant == Variant::fft) {
    block_x = gpu::fft_tile_side(filter.width, input.cols) - filter.width + 1;
    block_y = gpu::fft_tile_side(filter.height, input.rows) - filter.height + 1;
  } else {
    return {};
  }
  double sum_abs = 0.0;
  for (const double w : filter.weights) sum_abs += std::abs(w);
  // Whatever block holds an output reads input only within block - 1 outputs of it plus the
  // footprint on each side: the window of every such block, through the border rule.
  const int left = block_x - 1 + anchor_x;
  const int right = block_x - 1 + filter.width - 1 - anchor_x;
  const int top = block_y - 1 + anchor_y;
  const int bottom = block_y - 1 + filter.height - 1 - anchor_y;
  cv::Mat magnitudes;
  input.convertTo(magnitudes, CV_MAKETYPE(CV_64F, input.channels()));
  magnitudes = cv::abs(magnitudes);
  for (auto it = magnitudes.begin<double>(); it != magnitudes.end<double>(); ++it)
    if (!std::isfinite(*it)) *it = 0.0;  // a block holding one sums directly (tensor), or the value is due as it is
  std::vector<cv::Mat> planes;
  cv::split(magnitudes, planes);
  for (cv::Mat& plane : planes) {
    cv::Mat padded;
    cv::copyMakeBorder(plane, padded, top, bottom, left, right, common::opencv_border(border) | cv::BORDER_ISOLATED,
                       cv::Scalar::all(std::abs(border_value)));
    cv::Mat wide = running_max_rows(padded, left + right + 1);
    cv::Mat transposed = running_max_rows(wide.t(), top + bottom + 1);
    plane = transposed.t();
    // `tensor` counts the constant border's value into every block's largest magnitude.
    if (variant == Variant::tensor && border == Border::constant) cv::max(plane, std::abs(border_value), plane);
    plane = plane * sum_abs + std::abs(delta);
  }
  cv::Mat scales;
  cv::merge(planes, scales);
  return scales;
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
