// SPDX-License-Identifier: Apache-2.0
// The CPU's separable path: rank-1 filters whose cv::filter2D result a separable sum reproduces
// bit for bit (cpu_separable_plan says which and why), evaluated by cv::sepFilter2D on integer
// factors (exact float sums) and one scaling and rounding by convertTo. A kw x kh filter costs
// kw + kh operations a value instead of filter2D's kw * kh.
#include "convolve/cpu_separable.hpp"

#include "common/opencv_border.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>

namespace cuconv::convolution {

namespace {

/// filter2D as called (OpenCV 4.6, hal::filter2D's dftFilter2D) sums directly below this many
/// taps and through a float DFT from it, whose rounding no direct sum reproduces.
bool filter2d_sums_directly(int taps, int input_depth, int output_depth) {
  const bool large_threshold = input_depth == CV_8U && (output_depth == CV_8U || output_depth == CV_16S);
  return taps < (large_threshold ? 130 : 50);
}

/// The smallest s >= 0 for which v * 2^s is an integer; -1 when none is (v is not finite).
int dyadic_shift(double v) {
  if (!std::isfinite(v)) return -1;
  for (int s = 0; s <= 160; ++s) {
    const double scaled = std::ldexp(v, s);
    if (scaled == std::floor(scaled)) return s;
  }
  return -1;
}

/// gamma_n for float's unit roundoff 2^-24 (Higham, "Accuracy and Stability", 3.1).
double gamma_float(int n) {
  const double nu = n * std::ldexp(1.0, -24);
  return nu / (1.0 - nu);
}

/// An integer kh x kw matrix as vertical (x) horizontal integer vectors, when it is rank 1: the
/// horizontal factor is the first non-zero row divided by its entries' gcd, so every row is an
/// integer multiple of it.
bool integer_rank1(const std::vector<std::int64_t>& w, int kw, int kh, std::vector<int>& horizontal,
                   std::vector<int>& vertical) {
  const auto at = [&](int i, int j) { return w[static_cast<std::size_t>(i) * kw + j]; };
  int pivot_row = -1;
  for (int i = 0; i < kh && pivot_row < 0; ++i)
    for (int j = 0; j < kw; ++j)
      if (at(i, j) != 0) {
        pivot_row = i;
        break;
      }
  if (pivot_row < 0) return false;
  std::int64_t g = 0;
  int pivot_col = -1;
  for (int j = 0; j < kw; ++j) {
    g = std::gcd(g, at(pivot_row, j));
    if (pivot_col < 0 && at(pivot_row, j) != 0) pivot_col = j;
  }
  horizontal.assign(static_cast<std::size_t>(kw), 0);
  vertical.assign(static_cast<std::size_t>(kh), 0);
  for (int j = 0; j < kw; ++j) horizontal[static_cast<std::size_t>(j)] = static_cast<int>(at(pivot_row, j) / g);
  const std::int64_t h = horizontal[static_cast<std::size_t>(pivot_col)];
  for (int i = 0; i < kh; ++i) {
    if (at(i, pivot_col) % h != 0) return false;
    const std::int64_t v = at(i, pivot_col) / h;
    for (int j = 0; j < kw; ++j)
      if (at(i, j) != v * horizontal[static_cast<std::size_t>(j)]) return false;
    vertical[static_cast<std::size_t>(i)] = static_cast<int>(v);
  }
  return true;
}

/// Dyadic weights: filter2D's float products and partial sums are all exact, so its result is
/// the exact sum rounded once, which the integer sums give too.
std::optional<CpuSeparablePlan> dyadic_plan(const ConvolveJob& job, double max_input, float delta) {
  int shift = dyadic_shift(delta);
  if (shift < 0) return std::nullopt;
  for (float w : job.weights) {
    const int needed = dyadic_shift(w);
    if (needed < 0) return std::nullopt;
    shift = std::max(shift, needed);
  }
  // Every partial sum, in units of 2^-shift, is an integer below 2^24: exact in float (and int32).
  double magnitude = std::abs(std::ldexp(static_cast<double>(delta), shift));
  std::vector<std::int64_t> units;
  units.reserve(job.weights.size());
  for (float w : job.weights) {
    const double scaled = std::ldexp(static_cast<double>(w), shift);
    magnitude += max_input * std::abs(scaled);
    if (magnitude >= std::ldexp(1.0, 24)) return std::nullopt;
    units.push_back(static_cast<std::int64_t>(scaled));
  }
  CpuSeparablePlan plan;
  if (!integer_rank1(units, job.kw(), job.kh(), plan.horizontal, plan.vertical)) return std::nullopt;
  plan.scale = std::ldexp(1.0, -shift);
  plan.delta = delta;
  return plan;
}

/// Equal weights w on integer outputs: every exact value S * w + delta (S the window's integer
/// sum) stays farther from a tie than filter2D's float sum can stray (gamma_{n+2} of its
/// magnitude), so filter2D rounds each to the integer the exact value rounds to.
std::optional<CpuSeparablePlan> equal_weights_plan(const ConvolveJob& job, double max_input, float delta) {
  const float w = job.weights.front();
  if (w == 0.0f || !std::isfinite(w) || !std::isfinite(delta) ||
      std::any_of(job.weights.begin(), job.weights.end(), [w](float v) { return v != w; }))
    return std::nullopt;
  const int taps = static_cast<int>(job.weights.size());
  const double largest_sum = max_input * taps;
  if (largest_sum > std::ldexp(1.0, 22)) return std::nullopt;  // too many sums to check
  const double largest_value = largest_sum * std::abs(w) + std::abs(delta);
  if (largest_value >= std::ldexp(1.0, 30)) return std::nullopt;  // keep clear of cvRound's int range
  // filter2D's rounding (taps + 1 float steps, one more for safety); convertTo's S * w + delta in
  // float rounds at most twice, within the same margin.
  const double stray = gamma_float(taps + 2) * largest_value;
  const auto sums = static_cast<std::int64_t>(largest_sum);
  for (std::int64_t s = 0; s <= sums; ++s) {
    const double value = static_cast<double>(s) * w + delta;
    if (std::abs(value - std::floor(value) - 0.5) <= stray) return std::nullopt;
  }
  CpuSeparablePlan plan;
  plan.horizontal.assign(static_cast<std::size_t>(job.kw()), 1);
  plan.vertical.assign(static_cast<std::size_t>(job.kh()), 1);
  plan.scale = w;
  plan.delta = delta;
  return plan;
}

}  // namespace

std::optional<CpuSeparablePlan> cpu_separable_plan(const ConvolveJob& job, int input_depth) {
  if (input_depth != CV_8U && input_depth != CV_16U) return std::nullopt;
  if (job.weights.empty() || !filter2d_sums_directly(job.kw() * job.kh(), input_depth, job.output_depth))
    return std::nullopt;
  const double max_input = input_depth == CV_8U ? 255.0 : 65535.0;
  const auto delta = static_cast<float>(job.delta);  // filter2D adds delta as its float sum type
  if (auto plan = dyadic_plan(job, max_input, delta)) return plan;
  if (job.output_depth == CV_32F) return std::nullopt;  // float results keep filter2D's rounding
  return equal_weights_plan(job, max_input, delta);
}

cv::Mat convolve_cpu_separable(const cv::Mat& src, const ConvolveJob& job, const CpuSeparablePlan& plan,
                               const cv::Mat& into) {
  // Everything read from `src` (the padded copy, alpha) is copied before `into` is written. One
  // extra pixel on the top-left keeps the view off offset (0, 0), so sepFilter2D reads the
  // padding as the view's neighbours (cpu_reference.cpp does the same for filter2D).
  const int top = job.anchor_y + 1;
  const int left = job.anchor_x + 1;
  cv::Mat padded;
  cv::copyMakeBorder(src, padded, top, job.kh() - 1 - job.anchor_y, left, job.kw() - 1 - job.anchor_x,
                     common::opencv_border(job.border) | cv::BORDER_ISOLATED, cv::Scalar::all(job.border_value));
  cv::Mat alpha;
  if (job.keep_alpha && src.channels() == 4) {
    cv::extractChannel(src, alpha, 3);
    alpha.convertTo(alpha, job.output_depth);
  }
  // Integer weights in float: every product and partial sum is an integer below 2^24, so
  // sepFilter2D's float sums are exact whatever its order; convertTo then scales (exactly for
  // dyadic weights, within the equal-weights plan's margin otherwise), adds delta and rounds half
  // to even with saturation, as filter2D's cast.
  cv::Mat row_kernel(1, job.kw(), CV_32F);
  cv::Mat column_kernel(job.kh(), 1, CV_32F);
  for (int j = 0; j < job.kw(); ++j)
    row_kernel.at<float>(0, j) = static_cast<float>(plan.horizontal[static_cast<std::size_t>(j)]);
  for (int i = 0; i < job.kh(); ++i)
    column_kernel.at<float>(i, 0) = static_cast<float>(plan.vertical[static_cast<std::size_t>(i)]);
  cv::Mat dst = into;  // a caller's image of this size and type is kept, not reallocated
  dst.create(src.size(), CV_MAKETYPE(job.output_depth, src.channels()));
  // Bands of rows whose float sums stay in cache (about 1 MB), filtered side by side on OpenCV's
  // threads; each band's view reads its neighbours' rows from the padded image.
  const std::size_t row_bytes = static_cast<std::size_t>(src.cols) * static_cast<std::size_t>(src.channels()) * 4;
  const int band = static_cast<int>(std::clamp<std::size_t>((std::size_t{1} << 20) / row_bytes, 16, 256));
  cv::parallel_for_(cv::Range(0, (src.rows + band - 1) / band), [&](const cv::Range& bands) {
    cv::Mat sums;
    for (int b = bands.start; b < bands.end; ++b) {
      const int first = b * band;
      const int rows = std::min(band, src.rows - first);
      cv::sepFilter2D(padded(cv::Rect(left, top + first, src.cols, rows)), sums, CV_32F, row_kernel, column_kernel,
                      cv::Point(job.anchor_x, job.anchor_y), 0.0, cv::BORDER_CONSTANT);
      cv::Mat out = dst.rowRange(first, first + rows);
      sums.convertTo(out, job.output_depth, plan.scale, plan.delta);
    }
  });
  if (!alpha.empty()) cv::insertChannel(alpha, dst, 3);
  return dst;
}

}  // namespace cuconv::convolution
