// SPDX-License-Identifier: Apache-2.0
// The 32F rule for `tensor` and `fft`, each value judged by the window of the block or tile that
// computes it (float_rule_block_scales), and fft's integer rule where the tie band reaches 1/2:
// results made on the CPU as those kernels compute (the tensor float kernel's admitted error
// against its own block's scale; overlap-save tiles through float DFTs, as launch_fft.cu) pass,
// and planted defects the image-wide scale let through fail, in both the product's rule
// (check_against_reference, --compare's) and the GPU suites' (tests/support/exact_sum.hpp).
#include "exact_sum.hpp"
#include "gpu/launch/launch.hpp"  // fft_tile_side
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

using namespace cuconv;

namespace {

int border_code(Border border) { return test::opencv_border_code(border); }

/// The input at (y, x) of channel `c` through the border rule, as every kernel reads it
/// (kernels/common.cuh interpolate_border is cv::borderInterpolate's code).
double border_read(const cv::Mat& wide, int y, int x, int c, Border border, double border_value) {
  const int yy = cv::borderInterpolate(y, wide.rows, border_code(border));
  const int xx = cv::borderInterpolate(x, wide.cols, border_code(border));
  if (yy < 0 || xx < 0) return border_value;
  return wide.ptr<double>(yy)[static_cast<std::ptrdiff_t>(xx) * wide.channels() + c];
}

double abs_sum(const Filter& f) {
  double s = 0.0;
  for (double w : f.weights) s += std::abs(w);
  return s;
}

/// A right `tensor` float result, from the exact sum: each value moved by +-5e-6 (the largest
/// error dense_tensor_split_float admits, half the rule) of its own block's scale, sum|k| x M +
/// |delta|, M the largest finite magnitude of the block's window as the kernel finds it: 128
/// columns, a strip of `strip_rows` rows, the constant border's value counted in.
cv::Mat tensor_like(const cv::Mat& src, const Filter& f, Border border, double border_value, double delta,
                    int strip_rows) {
  const int ax = f.resolved_anchor_x();
  const int ay = f.resolved_anchor_y();
  const cv::Mat exact = test::exact_sum_double(src, f, ax, ay, border, border_value, delta);
  cv::Mat wide;
  src.convertTo(wide, CV_64F);
  cv::Mat out(src.size(), CV_32F);
  const double k = abs_sum(f);
  for (int by = 0; by < src.rows; by += strip_rows)
    for (int bx = 0; bx < src.cols; bx += 128) {
      double largest = border == Border::constant ? std::abs(border_value) : 0.0;
      const int rows = std::min(strip_rows, src.rows - by);
      const int cols = std::min(128, src.cols - bx);
      for (int y = by - ay; y < by + rows + f.height - 1 - ay; ++y)
        for (int x = bx - ax; x < bx + cols + f.width - 1 - ax; ++x) {
          const double v = std::abs(border_read(wide, y, x, 0, border, border_value));
          if (std::isfinite(v)) largest = std::max(largest, v);
        }
      const double error = 5e-6 * (k * largest + std::abs(delta));
      for (int y = by; y < by + rows; ++y)
        for (int x = bx; x < bx + cols; ++x)
          out.at<float>(y, x) = static_cast<float>(exact.at<double>(y, x) + ((x + y) % 2 == 0 ? error : -error));
    }
  return out;
}

/// `fft` as launch_fft.cu computes it, on the CPU: tiles of fft_tile_side per side gathered
/// through the border rule, float DFTs, the conjugate filter spectrum, the valid part scattered,
/// delta added in float. One channel; the result in double (the caller rounds to the output type).
cv::Mat fft_like(const cv::Mat& src, const Filter& f, Border border, double border_value, double delta) {
  const int ax = f.resolved_anchor_x();
  const int ay = f.resolved_anchor_y();
  const int tw = gpu::fft_tile_side(f.width, src.cols);
  const int th = gpu::fft_tile_side(f.height, src.rows);
  const int vx = tw - f.width + 1;
  const int vy = th - f.height + 1;
  cv::Mat wide;
  src.convertTo(wide, CV_64F);
  cv::Mat kernel = cv::Mat::zeros(th, tw, CV_32F);
  for (int i = 0; i < f.height; ++i)
    for (int j = 0; j < f.width; ++j) kernel.at<float>(i, j) = static_cast<float>(f.at(i, j));
  cv::Mat spectrum;
  cv::dft(kernel, spectrum, cv::DFT_COMPLEX_OUTPUT);
  cv::Mat out(src.size(), CV_64F);
  for (int ty = 0; ty * vy < src.rows; ++ty)
    for (int tx = 0; tx * vx < src.cols; ++tx) {
      cv::Mat tile(th, tw, CV_32F);
      for (int v = 0; v < th; ++v)
        for (int u = 0; u < tw; ++u)
          tile.at<float>(v, u) =
              static_cast<float>(border_read(wide, ty * vy - ay + v, tx * vx - ax + u, 0, border, border_value));
      cv::Mat transformed, product, back;
      cv::dft(tile, transformed, cv::DFT_COMPLEX_OUTPUT);
      cv::mulSpectrums(transformed, spectrum, product, 0, true);  // correlation, as filter2D
      cv::idft(product, back, cv::DFT_SCALE | cv::DFT_REAL_OUTPUT);
      for (int v = 0; v < vy && ty * vy + v < src.rows; ++v)
        for (int u = 0; u < vx && tx * vx + u < src.cols; ++u)
          out.at<double>(ty * vy + v, tx * vx + u) = back.at<float>(v, u) + static_cast<float>(delta);
    }
  return out;
}

/// A float image of `rows` x `cols`, values in [-100, 100] times 1e4 left of column `split` and
/// 1e-5 from it on: two magnitudes, as tests/gpu/test_gpu_tensor_planes.cpp's "two scales".
cv::Mat two_scales(int rows, int cols, int split, std::uint64_t seed) {
  cv::Mat src = test::random_image(rows, cols, CV_32F, 1, seed);
  src(cv::Rect(0, 0, split, rows)) *= 1e4;
  src(cv::Rect(split, 0, cols - split, rows)) *= 1e-5;
  return src;
}

/// The GPU suites' rule for `got` from `variant` (check_float_rule's, without the run).
double suite_error(const cv::Mat& got, const cv::Mat& src, const Filter& f, Variant variant,
                   Border border = Border::reflect101, double border_value = 0.0, double delta = 0.0) {
  const int ax = f.resolved_anchor_x();
  const int ay = f.resolved_anchor_y();
  const cv::Mat exact = test::exact_sum_double(src, f, ax, ay, border, border_value, delta);
  return test::float_rule_error(got, exact, src, f, ax, ay, border, border_value, delta,
                                float_rule_block_scales(src, f, ax, ay, border, border_value, delta, variant));
}

/// The image-wide scale of ce718e6 (sum|k| x max|x| + |delta|), as the rule stood before.
double image_wide_error(const cv::Mat& got, const cv::Mat& src, const Filter& f) {
  double largest = 0.0;
  cv::minMaxLoc(cv::abs(src), nullptr, &largest);
  const cv::Mat exact =
      test::exact_sum_double(src, f, f.resolved_anchor_x(), f.resolved_anchor_y(), Border::reflect101, 0, 0);
  const cv::Mat floor(src.size(), CV_64F, cv::Scalar::all(abs_sum(f) * largest));
  return test::float_rule_error(got, exact, src, f, f.resolved_anchor_x(), f.resolved_anchor_y(), Border::reflect101, 0,
                                0, floor);
}

struct Planted {
  std::string what;
  cv::Mat image;
};

/// The defects: the small part (columns from `from`) zeroed, and 1% off there.
std::vector<Planted> plant(const cv::Mat& right, int from) {
  cv::Mat zeroed = right.clone();
  zeroed(cv::Rect(from, 0, right.cols - from, right.rows)).setTo(0.0f);
  cv::Mat off = right.clone();
  off(cv::Rect(from, 0, right.cols - from, right.rows)) *= 1.01;
  return {{"small part zeroed", zeroed}, {"small part 1% off", off}};
}

void check_block_rule(const cv::Mat& src, const Filter& f, Variant variant, const cv::Mat& right, int small_from) {
  const double bound = float_rule_bound(static_cast<long long>(f.width) * f.height);
  ConvolveOptions o;
  {
    const double error = suite_error(right, src, f, variant);
    INFO(to_string(variant) << ": right result, relative error " << error << " (bound " << bound << ")");
    CHECK(error <= bound);
    CHECK(error > 0.0);  // the emulated rounding is there
    CHECK(check_against_reference(src, f, o, right, variant).stats.within_tolerance);
  }
  for (const Planted& p : plant(right, small_from)) {
    INFO(to_string(variant) << ": " << p.what);
    CHECK(image_wide_error(p.image, src, f) <= bound);  // the hole: the image's scale passed it
    CHECK(suite_error(p.image, src, f, variant) > bound);
    const ComparisonStats s = check_against_reference(src, f, o, p.image, variant).stats;
    CHECK_FALSE(s.within_tolerance);
  }
}

}  // namespace

TEST_CASE("block rules: tensor's 32F values are judged by their block's window, two scales in one image") {
  // test_gpu_tensor_planes.cpp's image: 160 x 520, 1e6 left of column 260, 1e-3 from it.
  const cv::Mat src = two_scales(160, 520, 260, 79);
  const Filter f = test::random_filter(15, 15, 77);
  for (const int strip_rows : {32, 128}) {
    INFO("strips of " << strip_rows << " rows");
    const cv::Mat right = tensor_like(src, f, Border::reflect101, 0, 0, strip_rows);
    // Blocks from column 384 read only columns from 377: the small scale.
    check_block_rule(src, f, Variant::tensor, right, 400);
  }
  // Every block's window holds the big half when the image is one block wide: nothing to tell.
  const cv::Mat narrow = two_scales(40, 100, 50, 80);
  const cv::Mat blocks = float_rule_block_scales(narrow, f, 7, 7, Border::reflect101, 0, 0, Variant::tensor);
  double least = 0.0;
  cv::minMaxLoc(blocks, &least);
  CHECK(least > abs_sum(f) * 1e5);
}

TEST_CASE("block rules: tensor's block scale counts a constant border's value, as its kernel does") {
  const cv::Mat src = two_scales(300, 600, 150, 81);  // windows around row 150, column 300 reach no border
  const Filter f = test::random_filter(5, 5, 82);
  const double border_value = 1e6;
  const cv::Mat blocks = float_rule_block_scales(src, f, 2, 2, Border::constant, border_value, 0.25, Variant::tensor);
  const cv::Mat fft = float_rule_block_scales(src, f, 2, 2, Border::constant, border_value, 0.25, Variant::fft);
  double least = 0.0;
  cv::minMaxLoc(blocks, &least);
  CHECK(least == doctest::Approx(abs_sum(f) * border_value + 0.25).epsilon(1e-12));
  // A right result with every block's window scaled by the border value passes.
  const cv::Mat right = tensor_like(src, f, Border::constant, border_value, 0.25, 64);
  CHECK(suite_error(right, src, f, Variant::tensor, Border::constant, border_value, 0.25) <= 1e-5);
  CHECK(fft.size() == src.size());
  CHECK(float_rule_block_scales(src, f, 2, 2, Border::constant, border_value, 0.25, Variant::fast).empty());
}

TEST_CASE("block rules: fft's 32F values are judged by their tile, two scales in one image") {
  // Tiles of 512 columns (498 outputs for 15 taps): the third tile, from column 996, reads
  // columns 989 on (reflected back from 1399 to no less than 895), all of the small scale.
  const cv::Mat src = two_scales(40, 1400, 500, 83);
  const Filter f = test::random_filter(15, 15, 84);
  REQUIRE(gpu::fft_tile_side(15, 1400) == 512);
  cv::Mat right;
  fft_like(src, f, Border::reflect101, 0, 0).convertTo(right, CV_32F);
  check_block_rule(src, f, Variant::fft, right, 1010);
  // On test_gpu_tensor_planes.cpp's 520 columns the one tile reads both halves: fft is judged by
  // the big one there, as its transform's error is.
  const cv::Mat one_tile = two_scales(160, 520, 260, 79);
  cv::Mat emulated;
  fft_like(one_tile, f, Border::reflect101, 0, 0).convertTo(emulated, CV_32F);
  CHECK(suite_error(emulated, one_tile, f, Variant::fft) <= 1e-5);
  CHECK(suite_error(emulated, one_tile, f, Variant::fast) > 1e-5);  // per footprint it would fail
}

TEST_CASE("block rules: fft's 16-bit rule fails a truncation at every sum|w| the presets reach") {
  // 16-bit input turns the tie band past 1/2 from sum|w| of about 3.9; the presets reach 32
  // (scharr). A truncated result (floor instead of nearest) is off by one on about half the
  // values; fft's own results, emulated with float DFTs as launch_fft.cu runs them, pass.
  for (const double target : {1.0, 4.0, 8.0, 16.0, 32.0, 64.0}) {
    Filter f = test::random_filter(5, 5, 85);
    const double scale = target / abs_sum(f);
    for (double& w : f.weights) w *= scale;
    // Inputs small enough that the sums stay inside 16 bits around delta.
    cv::Mat src = test::random_image(64, 64, CV_16U, 1, 86);
    src.convertTo(src, CV_16U, 1.0 / (2.0 * target));
    ConvolveOptions o;
    o.delta = 32768;
    const cv::Mat sums = test::exact_sum_double(src, f, 2, 2, Border::reflect101, 0, o.delta);
    cv::Mat truncated(src.size(), CV_16U);
    for (int y = 0; y < src.rows; ++y)
      for (int x = 0; x < src.cols; ++x)
        truncated.at<std::uint16_t>(y, x) =
            static_cast<std::uint16_t>(test::saturate(std::floor(sums.at<double>(y, x)), CV_16U));
    const cv::Mat fft = fft_like(src, f, Border::reflect101, 0, o.delta);
    cv::Mat emulated(src.size(), CV_16U);
    for (int y = 0; y < src.rows; ++y)
      for (int x = 0; x < src.cols; ++x)
        emulated.at<std::uint16_t>(y, x) =
            static_cast<std::uint16_t>(test::saturate(std::nearbyint(fft.at<double>(y, x)), CV_16U));
    INFO("sum|w| " << target << ", tie band " << fft_tie_band(CV_16U, CV_16U, f));
    const ComparisonStats bad = check_against_reference(src, f, o, truncated, Variant::fft).stats;
    INFO("truncated: " << bad.differing_values << " of " << bad.total_values << " differ, " << bad.off_by_one_near_tie
                       << " near a tie");
    CHECK(bad.differing_values > bad.total_values / 4);
    CHECK_FALSE(bad.within_tolerance);
    const ComparisonStats good = check_against_reference(src, f, o, emulated, Variant::fft).stats;
    INFO("emulated fft: " << good.differing_values << " differ, " << good.off_by_one_near_tie << " near a tie");
    CHECK(good.within_tolerance);
  }
}
