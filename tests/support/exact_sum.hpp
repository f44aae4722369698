// SPDX-License-Identifier: Apache-2.0
#pragma once
// The exact correlation sum of filter2D's definition (double precision, rounded half to even) and
// the README's pass rules against it (integer and 32F), for the GPU suites of the separable and
// tensor paths.
#include "convolve/cpu_reference.hpp"  // stored_border_value
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/device_image.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

namespace cuconv::test {

inline double saturate(double v, int depth) {
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

/// The correlation sum of filter2D's definition in double, not rounded (CV_64F, the channels of
/// `src`). The constant border pads with `border_value` as `src`'s type stores it (saturated
/// for 8U and 16U, as every variant pads), not with the option's value.
inline cv::Mat exact_sum_double(const cv::Mat& src, const Filter& f, int anchor_x, int anchor_y, Border border,
                                double border_value, double delta) {
  cv::Mat wide;
  src.convertTo(wide, CV_MAKETYPE(CV_64F, src.channels()));
  cv::Mat padded;
  cv::copyMakeBorder(wide, padded, anchor_y, f.height - 1 - anchor_y, anchor_x, f.width - 1 - anchor_x,
                     cuconv::test::opencv_border_code(border),
                     cv::Scalar::all(convolution::stored_border_value(border_value, src.depth())));
  const int channels = src.channels();
  cv::Mat exact(src.rows, src.cols, CV_MAKETYPE(CV_64F, channels));
  for (int y = 0; y < src.rows; ++y)
    for (int x = 0; x < src.cols; ++x)
      for (int c = 0; c < channels; ++c) {
        double sum = delta;
        for (int i = 0; i < f.height; ++i) {
          const double* row = padded.ptr<double>(y + i) + static_cast<std::ptrdiff_t>(x) * channels + c;
          for (int j = 0; j < f.width; ++j) sum += f.at(i, j) * row[static_cast<std::ptrdiff_t>(j) * channels];
        }
        exact.ptr<double>(y)[x * channels + c] = sum;
      }
  return exact;
}

/// The exact sum rounded half to even (the default rounding mode of std::nearbyint) and saturated
/// to `out_depth`; colour channels only.
inline cv::Mat exact_sum(const cv::Mat& src, const Filter& f, int anchor_x, int anchor_y, Border border,
                         double border_value, double delta, int out_depth) {
  cv::Mat exact = exact_sum_double(src, f, anchor_x, anchor_y, border, border_value, delta);
  for (auto it = exact.begin<double>(); it != exact.end<double>(); ++it) *it = saturate(std::nearbyint(*it), out_depth);
  cv::Mat out;
  exact.convertTo(out, CV_MAKETYPE(out_depth, src.channels()));
  return out;
}

/// The sweeps' anchor by run index: the filter's own, (0, own), (own, kh - 1), (kw - 1, 0).
inline void cycle_anchor(ConvolveOptions& o, int index, int kw, int kh) {
  if (index % 4 == 1) o.anchor_x = 0;
  if (index % 4 == 2) o.anchor_y = kh - 1;
  if (index % 4 == 3) {
    o.anchor_x = kw - 1;
    o.anchor_y = 0;
  }
}

/// `convolve` on device views that start one pixel into a wider copy of `src` (rows off their
/// 4- and 16-byte boundaries): the variant that ran and the result, downloaded.
inline std::pair<Variant, cv::Mat> convolve_one_pixel_in(const cv::Mat& src, const Filter& f, const ConvolveOptions& o,
                                                         GpuWorkspace& workspace) {
  cv::Mat wider;
  cv::copyMakeBorder(src, wider, 0, 0, 1, 0, cv::BORDER_CONSTANT, cv::Scalar::all(9));
  const DeviceImage in = upload(wider);
  const DeviceImage out(wider.cols, wider.rows, src.channels(), src.depth());
  ConstDeviceImageView in_view = in.view();
  DeviceImageView out_view = out.view();
  const std::size_t pixel_bytes = src.elemSize();
  in_view.data += pixel_bytes;
  in_view.width -= 1;
  out_view.data += pixel_bytes;
  out_view.width -= 1;
  const Variant ran = convolve(in_view, out_view, f, o, workspace, nullptr);
  return {ran, download(out_view)};
}

/// `tensor` on `src` and on views one pixel into a wider copy of it (rows off their 4- and 16-byte
/// boundaries: the staging's column map, the scalar stores): the same bits, from one launch of the
/// kernel `launches` counts.
inline void check_unaligned_rows(const cv::Mat& src, const Filter& f, std::uint64_t (*launches)() noexcept,
                                 GpuWorkspace& workspace, const std::string& what) {
  ConvolveOptions o;
  o.variant = Variant::tensor;
  const cuconv::test::PoisonOutputs poisoned;
  const cv::Mat aligned = convolve(src, f, o).image;
  const std::uint64_t before = launches();
  const auto [ran, shifted] = convolve_one_pixel_in(src, f, o, workspace);
  INFO(what << ", " << src.channels() << " channel(s), rows one pixel in");
  CHECK(ran == Variant::tensor);
  CHECK(launches() - before == 1u);
  CHECK(bit_equal(shifted, aligned));
}
inline void check_unaligned_rows(const cv::Mat& src, const Filter& f, std::uint64_t (*launches)() noexcept,
                                 const std::string& what) {
  GpuWorkspace workspace;
  check_unaligned_rows(src, f, launches, workspace, what);
}

struct RuleCount {
  double max_diff = 0;
  std::size_t off_by_one = 0;
  std::size_t values = 0;
};

inline RuleCount compare_exact(const cv::Mat& got, const cv::Mat& expected) {
  cv::Mat a;
  cv::Mat b;
  got.convertTo(a, CV_64F);
  expected.convertTo(b, CV_64F);
  cv::Mat diff = cv::abs(a - b);
  RuleCount r;
  cv::minMaxLoc(diff.reshape(1), nullptr, &r.max_diff);
  r.off_by_one = static_cast<std::size_t>(cv::countNonZero(diff.reshape(1) > 0.5));
  r.values = diff.total() * static_cast<std::size_t>(diff.channels());
  return r;
}

/// A second poison for integer outputs: bytes 0x5A (the product's, gpu::set_poison_outputs, is 0xA5), so
/// an output the kernel never writes holds two different values in two runs, whatever value the
/// first poison happens to equal.
inline constexpr int kSecondPoisonByte = 0x5A;

/// `variant` again on device images (no strips) whose output was filled with kSecondPoisonByte
/// bytes instead of the product's poison: the result, downloaded.
inline cv::Mat convolve_second_poison(const cv::Mat& src, const Filter& f, ConvolveOptions o, Variant variant,
                                      int output_type) {
  o.variant = variant;
  const PoisonOutputs unpoisoned(false);  // the second poison instead
  const int depth = CV_MAT_DEPTH(output_type);
  const double filler = depth == CV_8U ? kSecondPoisonByte : kSecondPoisonByte * 257;  // 0x5A5A for 16 bits
  const DeviceImage in = upload(src);
  const DeviceImage out = upload(cv::Mat(src.rows, src.cols, output_type, cv::Scalar::all(filler)));
  GpuWorkspace workspace;
  const LaunchCounter::Paused uncounted(launch_counter());  // the tests count the first run's launches
  (void)convolve(in.view(), out.view(), f, o, workspace, nullptr);
  return download(out.view());
}

/// `variant` on `src` with a poisoned output; the options come back with the filter's own anchor
/// filled in where they left it to the filter. Integer outputs of a GPU variant (whole images)
/// are computed twice, under the product's poison and under the second one, and must be equal
/// bit for bit: a pixel left unwritten differs between the two.
inline std::pair<ConvolveResult, ConvolveOptions> run_poisoned(const cv::Mat& src, const Filter& f, ConvolveOptions o,
                                                               Variant variant) {
  o.variant = variant;
  const cuconv::test::PoisonOutputs poisoned;
  ConvolveResult got = convolve(src, f, o);
  if (got.image.depth() != CV_32F && got.variant_used != Variant::opencv && got.strips == 1 &&
      gpu::max_strip_rows() == 0 && o.gpu_memory_limit == 0) {
    const cv::Mat second = convolve_second_poison(src, f, o, got.variant_used, got.image.type());
    INFO("the same run on an output filled with 0x" << std::hex << kSecondPoisonByte << std::dec
                                                    << " bytes instead of the product's poison");
    CHECK(bit_equal(second, got.image));
  }
  if (o.anchor_x < 0) o.anchor_x = f.resolved_anchor_x();
  if (o.anchor_y < 0) o.anchor_y = f.resolved_anchor_y();
  return {std::move(got), o};
}

/// Runs `auto` (poisoned output) and checks the README's integer pass rule against the exact sum:
/// no value off by more than 1, at most 0.1% off by one. Returns the variant that ran.
inline Variant check_exact(const cv::Mat& src, const Filter& f, ConvolveOptions o, const std::string& what,
                           Variant variant = Variant::automatic) {
  const auto [got, ran] = run_poisoned(src, f, o, variant);
  const Variant used = got.variant_used;  // INFO's lambda cannot name a structured binding (clang 14)
  const cv::Mat expected = exact_sum(src, f, ran.anchor_x, ran.anchor_y, ran.border, ran.border_value,
                                     ran.delta + f.offset, got.image.depth());
  const RuleCount r = compare_exact(got.image, expected);
  INFO(what << " ran " << to_string(used) << ": max diff " << r.max_diff << ", " << r.off_by_one << " of " << r.values
            << " off by one");
  CHECK(r.max_diff <= 1.0);
  CHECK(static_cast<double>(r.off_by_one) <= 0.001 * static_cast<double>(r.values));
  return used;
}

/// Runs `variant` (poisoned output) on integer output and checks every value against the path's
/// own error bound: |got - exact| <= 0.5 + bound (the exact sum before rounding, saturated), so
/// each value off by one must lie within `bound` of a rounding tie. Adds the run's counts to
/// `total`, over which a sweep checks the pass rule's 0.1% (one value off by one in an image of a
/// few hundred values is what any inexact path gives near a tie). Returns the variant that ran.
inline Variant check_within_bound(const cv::Mat& src, const Filter& f, ConvolveOptions o, const std::string& what,
                                  Variant variant, double bound, RuleCount& total) {
  const auto [got, ran] = run_poisoned(src, f, o, variant);
  const Variant used = got.variant_used;  // INFO's lambda cannot name a structured binding (clang 14)
  const int out_depth = got.image.depth();
  const cv::Mat sums =
      exact_sum_double(src, f, ran.anchor_x, ran.anchor_y, ran.border, ran.border_value, ran.delta + f.offset);
  cv::Mat got_wide;
  got.image.convertTo(got_wide, CV_64F);
  const cv::Mat g = got_wide.reshape(1);
  const cv::Mat e = sums.reshape(1);
  double worst = 0.0;
  RuleCount r;
  for (int y = 0; y < g.rows; ++y)
    for (int x = 0; x < g.cols; ++x) {
      const double want = e.at<double>(y, x);
      const double have = g.at<double>(y, x);
      worst = std::max(worst, std::abs(have - saturate(want, out_depth)));
      const double diff = std::abs(have - saturate(std::nearbyint(want), out_depth));
      r.max_diff = std::max(r.max_diff, diff);
      if (diff > 0.5) ++r.off_by_one;
    }
  r.values = static_cast<std::size_t>(g.total());
  INFO(what << " ran " << to_string(used) << ": largest |got - exact| " << worst << " (limit 0.5 + " << bound << "), "
            << r.off_by_one << " of " << r.values << " off by one");
  CHECK(worst <= 0.5 + bound);
  CHECK(r.max_diff <= 1.0);
  total.max_diff = std::max(total.max_diff, r.max_diff);
  total.off_by_one += r.off_by_one;
  total.values += r.values;
  return used;
}

}  // namespace cuconv::test

namespace cuconv::test {

/// Each output's scale under the 32F rule: sum |k| |x| over its own footprint (through the border
/// rule, |border value| for the constant one) plus |delta|, from the same exact double sum on |x|
/// and |k|.
inline cv::Mat float_rule_scales(const cv::Mat& src, const Filter& f, int anchor_x, int anchor_y, Border border,
                                 double border_value, double delta) {
  Filter magnitudes = f;
  for (double& w : magnitudes.weights) w = std::abs(w);
  return exact_sum_double(cv::abs(src), magnitudes, anchor_x, anchor_y, border,
                          std::abs(convolution::stored_border_value(border_value, src.depth())), std::abs(delta));
}

/// Largest |got - exact| relative to each output's own scale (float_rule_scales; where
/// `block_scales` is given, the larger of it and the block's: tensor's and fft's). Where the exact
/// sum is not finite the result must be the same NaN or infinity, and where it is finite the
/// result must be finite too, else the error is infinite; so is any difference where the scale
/// is 0 (a footprint of zeros and no delta).
inline double float_rule_error(const cv::Mat& got, const cv::Mat& exact, const cv::Mat& src, const Filter& f,
                               int anchor_x, int anchor_y, Border border, double border_value, double delta,
                               const cv::Mat& block_scales = cv::Mat()) {
  cv::Mat scales = float_rule_scales(src, f, anchor_x, anchor_y, border, border_value, delta);
  if (!block_scales.empty()) cv::max(scales, block_scales, scales);
  const cv::Mat g = got.reshape(1);
  const cv::Mat e = exact.reshape(1);
  const cv::Mat s = scales.reshape(1);
  constexpr double kInfinite = std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (int y = 0; y < g.rows; ++y)
    for (int x = 0; x < g.cols; ++x) {
      const double want = e.at<double>(y, x);
      const double have = g.at<float>(y, x);
      if (!std::isfinite(want) || !std::isfinite(have)) {
        const bool same = std::isnan(want) ? std::isnan(have) : have == want;
        if (!same) return kInfinite;
        continue;
      }
      const double diff = std::abs(have - want);
      if (diff == 0.0) continue;
      const double scale = s.at<double>(y, x);
      if (!(scale > 0.0) || !std::isfinite(scale)) return kInfinite;
      worst = std::max(worst, diff / scale);
    }
  return worst;
}

/// Runs `variant` (poisoned output) on float input and checks the 32F pass rule against the exact
/// sum. Returns the variant that ran.
inline Variant check_float_rule(const cv::Mat& src, const Filter& f, ConvolveOptions o, const std::string& what,
                                Variant variant) {
  const auto [got, ran] = run_poisoned(src, f, o, variant);
  const Variant used = got.variant_used;  // INFO's lambda cannot name a structured binding (clang 14)
  const double delta = ran.delta + f.offset;
  const cv::Mat exact = exact_sum_double(src, f, ran.anchor_x, ran.anchor_y, ran.border, ran.border_value, delta);
  const double error =
      float_rule_error(got.image, exact, src, f, ran.anchor_x, ran.anchor_y, ran.border, ran.border_value, delta,
                       float_rule_block_scales(src, f, ran.anchor_x, ran.anchor_y, ran.border,
                                               convolution::stored_border_value(ran.border_value, src.depth()), delta,
                                               got.variant_used));
  INFO(what << " ran " << to_string(used) << ": relative error " << error);
  CHECK(got.image.depth() == CV_32F);
  CHECK(error <= float_rule_bound(static_cast<long long>(f.width) * f.height));
  return used;
}

}  // namespace cuconv::test
