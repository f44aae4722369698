// SPDX-License-Identifier: Apache-2.0
// Rank-1 detection (src/filter/rank1_splits.cpp): which filters `fast` runs as two 1-D passes, and that the
// factors reproduce the weights (bit for bit where the weights allow it).
#include "filter/splits.hpp"

#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/core/hal/interface.h>

#include <algorithm>
#include <utility>
#include <cmath>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

using cuconv::filter::factor_separable;

namespace {

/// Largest |vertical[i] * horizontal[j] - k[i][j]| over the filter.
double reconstruction_error(const cuconv::Filter& f, const cuconv::filter::SeparableFactors& s) {
  double worst = 0;
  for (int i = 0; i < f.height; ++i)
    for (int j = 0; j < f.width; ++j)
      worst = std::max(worst, std::abs(static_cast<double>(s.vertical[static_cast<std::size_t>(i)] *
                                                           s.horizontal[static_cast<std::size_t>(j)]) -
                                       f.at(i, j)));
  return worst;
}

}  // namespace

TEST_CASE("separable: presets with exact factors are reproduced bit for bit") {
  for (const char* spec : {"gauss3", "gauss5", "sobel-x", "box:4", "3x1:1,2,1", "1x7:1,2,3,4,3,2,1"}) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    const auto s = factor_separable(f.weights, f.width, f.height);
    INFO(spec);
    REQUIRE(s.has_value());
    CHECK(s->exact);
    CHECK(s->horizontal.size() == static_cast<std::size_t>(f.width));
    CHECK(s->vertical.size() == static_cast<std::size_t>(f.height));
    for (int i = 0; i < f.height; ++i)
      for (int j = 0; j < f.width; ++j)
        CHECK(s->vertical[static_cast<std::size_t>(i)] * s->horizontal[static_cast<std::size_t>(j)] ==
              static_cast<float>(f.at(i, j)));
  }
}

TEST_CASE("separable: gaussians and boxes of any size factor within the tolerance") {
  for (const char* spec : {"box:3", "box:31", "gaussian:7,2.5", "gaussian:15,5", "gaussian:63,20"}) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    const auto s = factor_separable(f.weights, f.width, f.height);
    INFO(spec);
    REQUIRE(s.has_value());
    double largest = 0;
    for (double w : f.weights) largest = std::max(largest, std::abs(w));
    CHECK(reconstruction_error(f, *s) <= 1e-6 * largest);
  }
}

TEST_CASE("separable: rank 2 and random filters are refused") {
  // The sum of two outer products: rank 2 (a Laplacian-like cross).
  const cuconv::Filter cross = cuconv::load_filter("3x3:0,1,0,1,-4,1,0,1,0");
  CHECK_FALSE(factor_separable(cross.weights, 3, 3).has_value());
  // An outer product with one weight nudged by 1e-4 of the largest: no longer rank 1.
  cuconv::Filter nudged = cuconv::load_filter("gauss5");
  nudged.weights[7] += 1e-4 * 36.0 / 256.0;
  CHECK_FALSE(factor_separable(nudged.weights, 5, 5).has_value());
  // Random weights: rank 1 only by a coincidence of measure zero.
  cv::RNG rng(1234);
  std::vector<double> random(25);
  for (double& w : random) w = rng.uniform(-1.0, 1.0);
  CHECK_FALSE(factor_separable(random, 5, 5).has_value());
  const cuconv::Filter sharpen = cuconv::load_filter("sharpen");
  CHECK_FALSE(factor_separable(sharpen.weights, sharpen.width, sharpen.height).has_value());
  // All zero, or a size that does not match the weights: nothing to factor.
  CHECK_FALSE(factor_separable(std::vector<double>(9, 0.0), 3, 3).has_value());
  CHECK_FALSE(factor_separable(std::vector<double>(8, 1.0), 3, 3).has_value());
}

TEST_CASE("separable: fast uses the factors for float outputs, and for integer ones within the pass rule") {
  using cuconv::filter::separable_for;
  const auto usable = [](const char* spec, int in, int out, double delta = 0.0) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    const auto factors = separable_for(f.weights, f.width, f.height, in, out, delta);
    return factors.has_value() && factors->fits_float_rank1;
  };
  CHECK(usable("gauss5", CV_8U, CV_8U));             // dyadic factors: exact sums
  CHECK(usable("gauss5", CV_8U, CV_8U, 0.5));        // exact sums round ties as the direct sum
  CHECK(usable("sobel-x", CV_8U, CV_16S));
  CHECK(usable("gaussian:7,2.5", CV_8U, CV_8U));     // inexact factors, error bound far below a tie
  CHECK(usable("gaussian:7,3", CV_8U, CV_16U));      // 15x15
  CHECK_FALSE(usable("gaussian:11,4", CV_8U, CV_8U));  // 23x23: more float steps than the bound allows (fast)
  CHECK(usable("box:3", CV_8U, CV_8U));
  CHECK_FALSE(usable("box:3", CV_8U, CV_8U, 0.5));   // flat areas would sum to ties
  CHECK_FALSE(usable("box:3", CV_8U, CV_8U, 1.5));
  CHECK_FALSE(usable("gaussian:7,2.5", CV_8U, CV_8U, 100.5));
  CHECK_FALSE(usable("gauss5", CV_16U, CV_16U));     // 16-bit sums need more than float's 24 bits
  CHECK_FALSE(usable("gaussian:7,2.5", CV_16U, CV_16U));  // (they go to the double sums below)
  CHECK(usable("gaussian:7,2.5", CV_8U, CV_32F));    // float outputs: the relative rule
  CHECK(usable("box:3", CV_32F, CV_32F));
  CHECK_FALSE(usable("sharpen", CV_32F, CV_32F));    // not rank 1
}

TEST_CASE("separable: the error bound grows with the filter's gain and stays under the limit for normalised blurs") {
  using cuconv::filter::factor_separable;
  using cuconv::filter::separable_error_bound;
  const cuconv::Filter small = cuconv::load_filter("gaussian:1,0.8");
  const cuconv::Filter large = cuconv::load_filter("gaussian:7,3");
  const double b_small = separable_error_bound(*factor_separable(small.weights, 3, 3), small.weights, 255, 0);
  const double b_large = separable_error_bound(*factor_separable(large.weights, 15, 15), large.weights, 255, 0);
  CHECK(b_small > 0);
  CHECK(b_small < b_large);
  CHECK(b_large < cuconv::filter::kSeparableErrorLimit);
  // A blur scaled by 1000 (its outputs saturate) has a bound far above the limit: dense.
  std::vector<double> loud = large.weights;
  for (double& w : loud) w *= 1000;
  CHECK(separable_error_bound(*factor_separable(loud, 15, 15), loud, 255, 0) > cuconv::filter::kSeparableErrorLimit);
  CHECK_FALSE(cuconv::filter::separable_for(loud, 15, 15, CV_8U, CV_8U, 0.0).has_value());
}

TEST_CASE("separable: tensor's split is exact for dyadic presets and its bound admits blurs fast's does not") {
  using cuconv::filter::separable_for;
  using cuconv::filter::tensor_split;
  const auto factors = [](const char* spec, double delta = 0.0) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    return separable_for(f.weights, f.width, f.height, CV_8U, CV_8U, delta);
  };
  // gauss5's factors are multiples of 1/16: scaled to integers with nothing lost.
  const auto gauss5 = factors("gauss5");
  REQUIRE(gauss5.has_value());
  const auto exact = tensor_split(gauss5->horizontal);
  REQUIRE(exact.has_value());
  CHECK(exact->quantization == 0.0);
  CHECK(gauss5->fits_tensor_split);
  CHECK(gauss5->fits_float_rank1);
  // Every split keeps |high| <= 2048 and |low| <= 1024 (exact in FP16) and rebuilds the scaled
  // weight within half a unit.
  for (const char* spec : {"gaussian:7,3", "gaussian:3,1.5", "box:5", "sobel-x", "gaussian:8,3.5"}) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    const auto s = cuconv::filter::factor_separable(f.weights, f.width, f.height);
    REQUIRE(s.has_value());
    const auto split = tensor_split(s->horizontal);
    REQUIRE(split.has_value());
    int largest = 0;
    for (std::size_t j = 0; j < s->horizontal.size(); ++j) {
      INFO(spec << " tap " << j);
      CHECK(std::abs(split->high[j]) <= 2048);
      CHECK(std::abs(split->low[j]) <= 1024);
      const double scaled = std::ldexp(static_cast<double>(s->horizontal[j]), split->exponent);
      CHECK(std::abs(scaled - (2048.0 * split->high[j] + split->low[j])) <= 0.5);
      largest = std::max(largest, std::abs(2048 * split->high[j] + split->low[j]));
    }
    CHECK(largest > (1 << 21));
    CHECK(largest <= (1 << 22));
  }
  // 15x15 and 17x17 blurs: fast's 31 / 35 float steps pass the limit at 17x17, tensor's kh + 1 do not.
  const auto g15 = factors("gaussian:7,3");
  REQUIRE(g15.has_value());
  CHECK(g15->fits_tensor_split);
  const auto g17 = factors("gaussian:8,3.5");
  REQUIRE(g17.has_value());
  CHECK_FALSE(g17->fits_float_rank1);
  CHECK(g17->fits_tensor_split);
  // Ties of flat areas keep both off.
  CHECK_FALSE(factors("box:3", 0.5).has_value());
  CHECK_FALSE(tensor_split(std::vector<float>(5, 0.0f)).has_value());
}

TEST_CASE("separable: the both-passes tensor kernel's scales are exact in FP16 and its bound admits the blurs") {
  using cuconv::filter::exact_in_half;
  using cuconv::filter::separable_for;
  using cuconv::filter::tensor_mma_error_bound;
  using cuconv::filter::tensor_mma_scales;
  using cuconv::filter::tensor_split;
  // binary16: 11 significant bits, normal down to 2^-14, subnormal grid 2^-24, largest 65504.
  for (double v : {1.0, -65504.0, 2047.0, 0.5 + std::ldexp(1.0, -11), std::ldexp(1.0, -24), std::ldexp(3.0, -24),
                   std::ldexp(1023.0, -24), 0.0})
    CHECK(exact_in_half(v));
  for (double v : {65505.0, 65536.0, 2049.0, 1.0 + std::ldexp(1.0, -11), std::ldexp(1.0, -25), std::ldexp(3.0, -25)})
    CHECK_FALSE(exact_in_half(v));

  for (const char* spec : {"gaussian:4,1.9", "gaussian:7,2.5", "gaussian:8,3.5", "box:9", "box:17", "gaussian:12,4",
                           "gaussian:15,5", "box:31"}) {
    INFO(std::string(spec));
    const cuconv::Filter f = cuconv::load_filter(spec);
    const auto factors = separable_for(f.weights, f.width, f.height, CV_8U, CV_8U, 0.0);
    REQUIRE(factors.has_value());
    CHECK(factors->fits_tensor_mma_split);
    const auto split = tensor_split(factors->horizontal);
    REQUIRE(split.has_value());
    const auto scales = tensor_mma_scales(*split, factors->vertical);
    REQUIRE(scales.has_value());
    // Row sums below 2^15 (255 sum |H| 2^-sigma in [2^14, 2^15)), the parts exact in FP16, the
    // largest vertical weight in [2^14, 2^15).
    double magnitude = 0.0;
    for (std::size_t j = 0; j < split->high.size(); ++j) {
      magnitude += std::abs(2048.0 * split->high[j] + split->low[j]);
      CHECK(exact_in_half(std::ldexp(split->high[j], 11 - scales->sigma)));
      CHECK(exact_in_half(std::ldexp(split->low[j], -scales->sigma)));
    }
    const double row_sums = std::ldexp(255.0 * magnitude, -scales->sigma);
    CHECK(row_sums < 32768.0);
    CHECK(row_sums >= 16384.0);
    double largest_v = 0.0;
    for (float v : factors->vertical) largest_v = std::max(largest_v, std::abs(static_cast<double>(v)));
    CHECK(std::ldexp(largest_v, scales->tau) >= 16384.0);
    CHECK(std::ldexp(largest_v, scales->tau) < 32768.0);
    // The bound stays under the limit, and above the part every split shares (the factorisation's
    // and the rounding of the weights) by at least the row sums' FP16 split.
    const double bound = tensor_mma_error_bound(*factors, *split, *scales, f.weights, 0.0);
    CHECK(bound < cuconv::filter::kSeparableErrorLimit);
    double magnitude_h = 0.0;
    double magnitude_v = 0.0;
    for (float h : factors->horizontal) magnitude_h += std::abs(static_cast<double>(h));
    for (float v : factors->vertical) magnitude_v += std::abs(static_cast<double>(v));
    CHECK(bound > 255.0 * split->quantization * magnitude_v + std::ldexp(255.0 * magnitude_h * magnitude_v, -23));
  }
  // A sharp gaussian (largest weight 0.44 of each factor): the accumulation term alone passes the
  // limit, so the float column sums keep it.
  const cuconv::Filter sharp = cuconv::load_filter("gaussian:4,0.9");
  const auto factors = separable_for(sharp.weights, 9, 9, CV_8U, CV_8U, 0.0);
  REQUIRE(factors.has_value());
  CHECK(factors->fits_tensor_split);
  CHECK_FALSE(factors->fits_tensor_mma_split);
  // Weights near 1e-34 would underflow the kernel's output scale: no scales.
  const cuconv::Filter box = cuconv::load_filter("box:9");
  std::vector<double> tiny = box.weights;
  for (double& w : tiny) w *= 1e-34;
  const auto tiny_factors = cuconv::filter::factor_separable(tiny, 9, 9);
  REQUIRE(tiny_factors.has_value());
  const auto tiny_split = tensor_split(tiny_factors->horizontal);
  REQUIRE(tiny_split.has_value());
  CHECK_FALSE(tensor_mma_scales(*tiny_split, tiny_factors->vertical).has_value());
  CHECK(tensor_mma_scales(*tensor_split(factors->horizontal), factors->vertical).has_value());
  // Ties of flat areas keep it off too.
  CHECK_FALSE(separable_for(box.weights, 9, 9, CV_8U, CV_8U, 0.5).has_value());
}

TEST_CASE("separable: the both-passes tensor kernel's arithmetic, emulated, stays within its bound") {
  using cuconv::filter::separable_for;
  using cuconv::filter::tensor_mma_error_bound;
  using cuconv::filter::tensor_mma_scales;
  using cuconv::filter::tensor_split;
  // binary16 rounding to nearest, ties to even: 11 significant bits, the subnormal grid 2^-24.
  const auto to_half = [](double v) {
    if (v == 0.0) return 0.0;
    int e = 0;
    std::frexp(std::abs(v), &e);
    const int last = std::max(e - 11, -24);
    return std::ldexp(std::nearbyint(std::ldexp(v, -last)), last);
  };
  cv::RNG rng(2611);
  std::vector<cuconv::Filter> filters;
  // Up to 17x17 two 16-row steps of row sums, from 19x19 three.
  for (const char* spec : {"gaussian:4,1.9", "gaussian:7,2.5", "gaussian:8,3.5", "box:9", "box:17", "gaussian:10,3",
                           "gaussian:15,5", "box:25"})
    filters.push_back(cuconv::load_filter(spec));
  for (int side : {13, 29}) {  // signed rank-1 filters
    cuconv::Filter f;
    f.width = f.height = side;
    const auto n = static_cast<std::size_t>(side);
    std::vector<double> h(n), v(n);
    double sh = 0.0, sv = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      sh += h[i] = rng.uniform(-0.1, 1.0);
      sv += v[i] = rng.uniform(-0.1, 1.0);
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) f.weights.push_back(v[i] / sv * h[j] / sh);
    f.origin = "signed rank-1";
    filters.push_back(f);
  }
  double worst_ratio = 0.0;
  for (const cuconv::Filter& f : filters) {
    for (double delta : {0.0, -3.25}) {
      const int k = f.width;
      const auto factors = separable_for(f.weights, k, k, CV_8U, CV_8U, delta);
      REQUIRE(factors.has_value());
      CAPTURE(f.origin);
      CAPTURE(k);
      CHECK(factors->fits_tensor_mma_split);
      const auto split = tensor_split(factors->horizontal);
      REQUIRE(split.has_value());
      const auto scales = tensor_mma_scales(*split, factors->vertical);
      REQUIRE(scales.has_value());
      const double bound = tensor_mma_error_bound(*factors, *split, *scales, f.weights, delta);
      std::vector<double> v_hi(static_cast<std::size_t>(k)), v_lo(static_cast<std::size_t>(k));
      for (int i = 0; i < k; ++i) {
        const double v = std::ldexp(static_cast<double>(factors->vertical[static_cast<std::size_t>(i)]), scales->tau);
        v_hi[static_cast<std::size_t>(i)] = to_half(v);
        v_lo[static_cast<std::size_t>(i)] = to_half(v - v_hi[static_cast<std::size_t>(i)]);
      }
      const float scale = std::ldexp(1.0f, scales->sigma - split->exponent - scales->tau);
      double worst = 0.0;
      for (int window = 0; window < 3000; ++window) {
        // Random bytes, and every tenth window at the extremes (all 255, or 0/255 alternating).
        std::vector<int> x(static_cast<std::size_t>(k * k));
        for (int i = 0; i < k * k; ++i)
          x[static_cast<std::size_t>(i)] = window % 10 == 0 ? 255 : window % 10 == 1 ? 255 * ((i + i / k) % 2) : rng.uniform(0, 256);
        double exact = delta;
        for (int i = 0; i < k * k; ++i) exact += f.weights[static_cast<std::size_t>(i)] * x[static_cast<std::size_t>(i)];
        // Row sums: the two exact accumulators, one float addition, the FP16 split.
        std::vector<double> r_hi(static_cast<std::size_t>(k)), r_lo(static_cast<std::size_t>(k));
        for (int i = 0; i < k; ++i) {
          double acc_hi = 0.0;
          double acc_lo = 0.0;
          for (int j = 0; j < k; ++j) {
            const int px = x[static_cast<std::size_t>(i * k + j)];
            acc_hi += px * std::ldexp(split->high[static_cast<std::size_t>(j)], 11 - scales->sigma);
            acc_lo += px * std::ldexp(split->low[static_cast<std::size_t>(j)], -scales->sigma);
          }
          const double r = static_cast<float>(static_cast<float>(acc_hi) + static_cast<float>(acc_lo));
          r_hi[static_cast<std::size_t>(i)] = to_half(r);
          r_lo[static_cast<std::size_t>(i)] = to_half(r - r_hi[static_cast<std::size_t>(i)]);
        }
        // The column sums as the kernel groups them: window row i lies in 16-row step
        // (offset + i) / 16 (offset: the output row's place in its step); each older step's high
        // products on their own accumulator (near, mid), the last step's and every cross product on
        // far; each accumulator rounded to float once, then added in the kernel's order.
        const int steps = k <= 17 ? 2 : 3;
        const int offset = rng.uniform(0, 16);
        double acc[3] = {0.0, 0.0, 0.0};
        for (int i = 0; i < k; ++i) {
          const auto u = static_cast<std::size_t>(i);
          const int step = (offset + i) / 16;
          REQUIRE(step < steps);
          acc[step == steps - 1 ? 2 : step] += v_hi[u] * r_hi[u];
          acc[2] += v_hi[u] * r_lo[u] + v_lo[u] * r_hi[u];
        }
        const float sum = steps == 2 ? static_cast<float>(acc[0]) + static_cast<float>(acc[2])
                                     : (static_cast<float>(acc[0]) + static_cast<float>(acc[1])) + static_cast<float>(acc[2]);
        const double y = std::fma(static_cast<double>(sum), static_cast<double>(scale), static_cast<double>(static_cast<float>(delta)));
        worst = std::max(worst, std::abs(static_cast<double>(static_cast<float>(y)) - exact));
      }
      INFO(f.origin << " " << k << "x" << k << " delta " << delta << ": largest error " << worst << ", bound " << bound);
      CHECK(worst <= bound);
      CHECK(worst > 0.0);  // the emulation rounds somewhere: the check can fail
      worst_ratio = std::max(worst_ratio, worst / bound);
    }
  }
  MESSAGE("both-passes emulation: largest error " << worst_ratio << " of the bound");
}

TEST_CASE("separable: 16-bit outputs take the double sums where their bound and the flat areas allow") {
  using cuconv::filter::separable_for;
  using cuconv::filter::wide_error_bound;
  const auto wide = [](const char* spec, double delta = 0.0) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    const auto factors = separable_for(f.weights, f.width, f.height, CV_16U, CV_16U, delta);
    if (factors) CHECK_FALSE(factors->fits_float_rank1);  // float sums never serve 16-bit results
    return factors.has_value() && factors->fits_double_rank1;
  };
  CHECK(wide("gauss5"));
  CHECK(wide("gaussian:7,2.5"));
  CHECK(wide("gaussian:15,5"));  // 31x31
  CHECK(wide("box:3"));
  CHECK(wide("box:4"));
  CHECK_FALSE(wide("box:3", 0.5));   // flat areas would sum to ties
  CHECK_FALSE(wide("gauss5", 0.5));  // the weights sum to 1: every flat area is a tie
  CHECK_FALSE(wide("sharpen"));      // not rank 1
  // The bound of a normalised 31x31 blur at 16-bit magnitudes: about 2^-53 times the steps and the
  // range, far under the limit. Ten weights moved by half the factorisation's tolerance (still
  // rank 1 to it) change sums by 65535 * 10 * 0.5e-6 * pivot, about 2e-3: summed densely.
  const cuconv::Filter g = cuconv::load_filter("gaussian:15,5");
  const auto factors = separable_for(g.weights, 31, 31, CV_16U, CV_16U, 0.0);
  REQUIRE(factors.has_value());
  const double bound = wide_error_bound(*factors, g.weights, 65535.0, 0.0);
  CHECK(bound > 0.0);
  CHECK(bound < 1e-9);
  std::vector<double> nudged = g.weights;
  const double pivot = *std::max_element(g.weights.begin(), g.weights.end());
  for (int i = 0; i < 10; ++i) nudged[static_cast<std::size_t>(i) * 31] += 0.5e-6 * pivot;
  REQUIRE(cuconv::filter::factor_separable(nudged, 31, 31).has_value());
  CHECK_FALSE(separable_for(nudged, 31, 31, CV_16U, CV_16U, 0.0).has_value());
  CHECK(separable_for(nudged, 31, 31, CV_16U, CV_32F, 0.0).has_value());  // float outputs keep the float path
}

TEST_CASE("separable: tensor's dense split keeps its digit sums exact and its arithmetic within the bound") {
  using cuconv::filter::dense_tensor_split;
  // Random dense filters (weights in [-0.3, 1) summing to 1), a box, a gaussian treated densely and
  // a filter with one huge and many tiny weights: every side from 1 to 17, square and not.
  struct Case {
    int kw, kh;
    std::vector<double> weights;
    std::string what;
  };
  std::vector<Case> cases;
  cv::RNG rng(2026);
  for (auto [kw, kh] : {std::pair{1, 1}, {3, 3}, {5, 5}, {2, 9}, {9, 9}, {17, 3}, {15, 15}, {16, 11}, {17, 17}}) {
    std::vector<double> w;
    double sum = 0;
    for (int k = 0; k < kw * kh; ++k) sum += w.emplace_back(rng.uniform(-0.3, 1.0));
    for (double& v : w) v /= sum;
    cases.push_back({kw, kh, w, "random " + std::to_string(kw) + "x" + std::to_string(kh)});
  }
  for (const char* spec : {"box:17", "gaussian:7,3", "gaussian:8,3.5", "gauss5"}) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    cases.push_back({f.width, f.height, f.weights, spec});
  }

  for (const Case& c : cases) {
    INFO(c.what);
    const auto split = dense_tensor_split(c.weights, c.kw, c.kh, 0.0);
    REQUIRE(split.has_value());
    CHECK(split->holds);
    CHECK(split->bound < cuconv::filter::kSeparableErrorLimit);
    // Signed-byte digits rebuilding H within half a unit of the scaled weight, and every digit's
    // chain over the whole filter below 2^24, so 8-bit sums are exact 32-bit integers that convert
    // to float exactly.
    double chain[3] = {};
    for (std::size_t k = 0; k < c.weights.size(); ++k) {
      long long h = 0;
      for (int d = 2; d >= 0; --d) {
        const int digit = split->digits[static_cast<std::size_t>(d)][k];
        CHECK(digit >= -128);
        CHECK(digit <= 127);
        chain[d] += std::abs(digit);
        h = 256 * h + digit;
      }
      CHECK(std::abs(std::ldexp(c.weights[k], split->exponent) - static_cast<double>(h)) <= 0.5);
    }
    for (double sum : chain) CHECK(255.0 * sum < 16777216.0);
    // The kernel's arithmetic on random 8-bit windows (integer chains, joined by two float FMAs,
    // the final scaling) stays within the bound of the exact sum.
    const float scale = std::ldexp(1.0f, -split->exponent);
    double worst = 0;
    for (int trial = 0; trial < 400; ++trial) {
      double exact = 0;
      long long acc[3] = {};
      for (std::size_t k = 0; k < c.weights.size(); ++k) {
        const int x = trial % 4 == 0 ? 255 : rng.uniform(0, 256);
        exact += c.weights[k] * x;
        for (std::size_t d = 0; d < 3; ++d) acc[d] += static_cast<long long>(x) * split->digits[d][k];
      }
      const float sum = std::fma(static_cast<float>(acc[2]), 65536.0f,
                                 std::fma(static_cast<float>(acc[1]), 256.0f, static_cast<float>(acc[0])));
      worst = std::max(worst, std::abs(static_cast<double>(std::fma(sum, scale, 0.0f)) - exact));
    }
    CHECK(worst <= split->bound);
  }
  // Dyadic weights (gauss5: multiples of 1/256) sum exactly at 2^8: no error, ties included, even
  // where a flat area lands on one (every weight 1/2 with delta 0); a delta off the grid is not exact.
  const cuconv::Filter gauss5 = cuconv::load_filter("gauss5");
  const auto exact = dense_tensor_split(gauss5.weights, 5, 5, 0.5);
  REQUIRE(exact.has_value());
  CHECK(exact->exponent == 8);
  CHECK(exact->bound == 0.0);
  CHECK(exact->holds);
  const auto halves = dense_tensor_split({0.5, 0.5}, 2, 1, 0.0);
  REQUIRE(halves.has_value());
  CHECK(halves->bound == 0.0);
  CHECK(halves->holds);
  const auto off_grid = dense_tensor_split(gauss5.weights, 5, 5, 0.3);
  REQUIRE(off_grid.has_value());
  CHECK(off_grid->bound > 0.0);
  // One weight of 1 beside 80 of 1e-7: 22 bits for the largest leave the small ones at zero,
  // 255 * 80e-7 = 0.002 of change, past the limit, so `tensor` leaves it to `fast`.
  std::vector<double> spiky(81, 1e-7);
  spiky[40] = 1.0;
  const auto spike = dense_tensor_split(spiky, 9, 9, 0.0);
  REQUIRE(spike.has_value());
  CHECK(spike->bound > cuconv::filter::kSeparableErrorLimit);
  CHECK_FALSE(spike->holds);
  // A flat area at a tie of an inexact split (1/2 plus a little that the integers lose: odd pixel
  // values sum to n + 1/2 within the bound) fails the rule; a delta moves the flat areas away.
  const auto half = dense_tensor_split({0.5, 1e-9}, 2, 1, 0.0);
  REQUIRE(half.has_value());
  CHECK(half->bound > 0.0);
  CHECK_FALSE(half->holds);
  const auto shifted = dense_tensor_split({0.5, 1e-9}, 2, 1, 0.25);
  REQUIRE(shifted.has_value());
  CHECK(shifted->holds);
  CHECK_FALSE(dense_tensor_split(std::vector<double>(9, 0.0), 3, 3, 0.0).has_value());
  CHECK_FALSE(dense_tensor_split({1.0, std::nan("")}, 2, 1, 0.0).has_value());
  CHECK_FALSE(dense_tensor_split({1e-60}, 1, 1, 0.0).has_value());
}

namespace {

struct SplitCase {
  std::string name;
  std::vector<double> weights;
  int kw;
  int kh;
};

/// Random filters of the given sides (weights uniform in [-0.3, 1]; divided by their count, or by
/// their sum when `normalised`) and the named presets, for the split bound tests.
std::vector<SplitCase> split_cases(cv::RNG& rng, std::initializer_list<std::pair<int, int>> sides,
                                   std::initializer_list<const char*> specs, bool normalised) {
  std::vector<SplitCase> cases;
  for (auto [kw, kh] : sides) {
    std::vector<double> w;
    double total = 0;
    for (int k = 0; k < kw * kh; ++k) total += w.emplace_back(rng.uniform(-0.3, 1.0));
    for (double& v : w) v /= normalised ? total : kw * kh;
    cases.push_back({"random " + std::to_string(kw) + "x" + std::to_string(kh), w, kw, kh});
  }
  for (const char* spec : specs) {
    const cuconv::Filter f = cuconv::load_filter(spec);
    cases.push_back({spec, f.weights, f.width, f.height});
  }
  return cases;
}

}  // namespace

TEST_CASE("separable: tensor's float split bounds the block floating point arithmetic") {
  using cuconv::filter::dense_tensor_split_float;
  // The kernel's arithmetic (kernels/tensor_dense_planes.cuh) emulated on random windows: the scale
  // 2^s from the window's largest magnitude M, pixels rounded to v = x 2^s as three signed digits,
  // the six digit products of weight 2^16 and more in three integer chains, the float epilogue.
  // Its error against the exact sum stays within bound * (sum |w| M + |delta|).
  const auto digits_of = [](long long v, int (&a)[3]) {
    for (int& d : a) {
      d = static_cast<int>(((v % 256) + 256 + 128) % 256 - 128);
      v = (v - d) / 256;
    }
  };
  cv::RNG rng(2027);
  const std::vector<SplitCase> filters = split_cases(
      rng, {{3, 3}, {5, 5}, {9, 9}, {15, 15}, {17, 17}, {31, 31}, {31, 1}, {7, 20}},
      {"gaussian:7,3", "gaussian:15,5", "box:31", "gauss5"}, false);
  for (const auto& [what, weights, kw, kh] : filters) {
    INFO(what);
    const auto split = dense_tensor_split_float(weights, kw, kh);
    REQUIRE(split.has_value());
    CHECK(split->holds);
    double weight_sum = 0;
    for (double w : weights) weight_sum += std::abs(w);
    double worst = 0;
    for (int trial = 0; trial < 300; ++trial) {
      const int octave = rng.uniform(-60, 61);
      const double delta = trial % 3 == 0 ? 0.0 : std::ldexp(rng.uniform(-1.0, 1.0), octave);
      std::vector<float> x(weights.size());
      for (float& v : x) v = static_cast<float>(std::ldexp(rng.uniform(-1.0, 1.0), octave + rng.uniform(-8, 1)));
      double largest = 0;
      for (float v : x) largest = std::max(largest, static_cast<double>(std::abs(v)));
      int e = 0;
      std::frexp(largest, &e);
      const int s = 22 - e;
      long long acc[3] = {};  // weights 2^32, 2^24, 2^16
      double exact = delta;
      for (std::size_t k = 0; k < weights.size(); ++k) {
        exact += weights[k] * x[k];
        int a[3];
        digits_of(static_cast<long long>(std::nearbyint(std::ldexp(static_cast<double>(x[k]), s))), a);
        const int* b[3] = {&split->digits[0][k], &split->digits[1][k], &split->digits[2][k]};
        acc[0] += static_cast<long long>(a[2]) * *b[2];
        acc[1] += static_cast<long long>(a[2]) * *b[1] + static_cast<long long>(a[1]) * *b[2];
        acc[2] += static_cast<long long>(a[2]) * *b[0] + static_cast<long long>(a[1]) * *b[1] +
                  static_cast<long long>(a[0]) * *b[2];
      }
      for (long long chain : acc) CHECK(std::abs(chain) < (1LL << 31));
      const float sum = std::fma(static_cast<float>(acc[0]), 65536.0f,
                                 std::fma(static_cast<float>(acc[1]), 256.0f, static_cast<float>(acc[2])));
      const int out = 16 - s - split->exponent;
      const float got = std::fma(sum * std::ldexp(1.0f, out / 2), std::ldexp(1.0f, out - out / 2), static_cast<float>(delta));
      worst = std::max(worst, std::abs(static_cast<double>(got) - exact) / (weight_sum * largest + std::abs(delta)));
    }
    CHECK(worst <= split->bound);
    CHECK(split->bound <= cuconv::filter::kDenseFloatErrorLimit);
  }
  // A spike among 960 weights of 1e-3: each small weight keeps only its low digit, whose products
  // with the pixels' low digits are dropped, so the bound passes the limit and `tensor` leaves it.
  std::vector<double> spike(31 * 31, 1e-3);
  spike[480] = 1.0;
  const auto refused = dense_tensor_split_float(spike, 31, 31);
  REQUIRE(refused.has_value());
  CHECK(refused->bound > cuconv::filter::kDenseFloatErrorLimit);
  CHECK_FALSE(refused->holds);
  CHECK_FALSE(dense_tensor_split_float(std::vector<double>(9, 0.0), 3, 3).has_value());
  CHECK_FALSE(dense_tensor_split_float({1.0, std::nan("")}, 2, 1).has_value());
  // dense_tensor_for: 8-bit, float and 16-bit up to 31 (8-bit past 17 on the planes kernel),
  // nothing for other depths.
  const std::vector<double> box19(19 * 19, 1.0 / 361);
  CHECK(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_8U, CV_8U, 0.0)->digits.size() == 3);
  CHECK_FALSE(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_8U, CV_16U, 0.0).has_value());
  CHECK(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_32F, CV_32F, 0.0).has_value());
  CHECK(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_16U, CV_16U, 0.0)->digits.size() == 4);
  CHECK_FALSE(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_16U, CV_32F, 0.0).has_value());
  const std::vector<double> box33(33 * 33, 1.0 / 1089);
  CHECK_FALSE(cuconv::filter::dense_tensor_for(box33, 33, 33, CV_16U, CV_16U, 0.0).has_value());
  CHECK_FALSE(cuconv::filter::dense_tensor_for(box33, 33, 33, CV_8U, CV_8U, 0.0).has_value());
}

TEST_CASE("separable: tensor's 16-bit split bounds the kernel's arithmetic and is exact on dyadic weights") {
  using cuconv::filter::dense_tensor_split_u16;
  // The kernel's arithmetic (kernels/tensor_dense_planes.cuh) emulated on random 16-bit windows:
  // pixel bytes lo, hi times the four weight digits, the eight products in five integer chains
  // (2^32, 2^24, 2^16, 2^8, 1) joined by double FMAs, scaled by 2^-e with the float delta added.
  // Before rounding it stays within the bound of the exact sum; the weights' sum is kept to half a
  // unit of 2^-e.
  cv::RNG rng(2028);
  const std::vector<SplitCase> filters =
      split_cases(rng, {{3, 3}, {5, 5}, {15, 15}, {17, 17}, {31, 31}, {31, 1}, {7, 20}},
                  {"gaussian:7,3", "gaussian:15,5", "box:31", "box:15"}, true);
  for (std::size_t n = 0; n < filters.size(); ++n) {
    const auto& [what, weights, kw, kh] = filters[n];
    INFO(what);
    const double delta = n % 2 == 0 ? 0.0 : 0.3;
    const auto split = dense_tensor_split_u16(weights, kw, kh, delta);
    REQUIRE(split.has_value());
    CHECK(split->holds);
    CHECK(split->bound > 0.0);
    CHECK(split->bound <= cuconv::filter::kSeparableErrorLimit);
    long double scaled_sum = 0.0L;
    long long whole_sum = 0;
    for (std::size_t k = 0; k < weights.size(); ++k) {
      scaled_sum += std::ldexp(static_cast<long double>(weights[k]), split->exponent);
      whole_sum += split->digits[0][k] + 256LL * split->digits[1][k] + 65536LL * split->digits[2][k] +
                   16777216LL * split->digits[3][k];
    }
    CHECK(std::abs(static_cast<long double>(whole_sum) - scaled_sum) <= 0.5L);
    double worst = 0;
    for (int trial = 0; trial < 200; ++trial) {
      long long acc[5] = {};
      long double exact = delta;
      for (std::size_t k = 0; k < weights.size(); ++k) {
        const int x = trial == 0 ? 65535 : rng.uniform(0, 65536);
        exact += static_cast<long double>(weights[k]) * x;
        const long long lo = x & 255;
        const long long hi = x >> 8;
        const long long d[4] = {split->digits[0][k], split->digits[1][k], split->digits[2][k], split->digits[3][k]};
        for (long long digit : d) CHECK(std::abs(digit) <= 128);
        acc[0] += hi * d[3];
        acc[1] += hi * d[2] + lo * d[3];
        acc[2] += hi * d[1] + lo * d[2];
        acc[3] += hi * d[0] + lo * d[1];
        acc[4] += lo * d[0];
      }
      for (long long chain : acc) CHECK(std::abs(chain) < (1LL << 31));
      double sum = static_cast<double>(acc[0]);
      for (int c = 1; c < 5; ++c) sum = std::fma(sum, 256.0, static_cast<double>(acc[c]));
      const double got =
          std::fma(sum, std::ldexp(1.0, -split->exponent), static_cast<double>(static_cast<float>(delta)));
      worst = std::max(worst, static_cast<double>(std::abs(static_cast<long double>(got) - exact)));
    }
    MESSAGE(what << ": worst " << worst << ", bound " << split->bound);
    CHECK(worst <= split->bound);
  }
  // Dyadic weights (integers / 256) with a delta on the same grid: every step exact, bound 0, so
  // results at a tie (n + 1/2) round as the exact sum's. Weights summing to 1/pi: some of the
  // 65536 flat values sum to within the bound of a tie, yet the emulated kernel rounds each flat
  // area as the exact sum, so the split holds.
  // Refused: a weight 3 * 2^-42 below 1/2 (the kernel's 30-bit weight is 1/2, so an odd flat area
  // lands on a tie and rounds to even where the exact sum rounds down), and a spike among 960
  // small weights (their rounding at the spike's scale passes the limit).
  std::vector<double> dyadic;
  for (int k = 0; k < 25; ++k) dyadic.push_back(rng.uniform(-40, 200) / 256.0);
  const auto exact = dense_tensor_split_u16(dyadic, 5, 5, 0.5);
  REQUIRE(exact.has_value());
  CHECK(exact->bound == 0.0);
  CHECK(exact->holds);
  std::vector<double> odd_sum(filters[2].weights);
  for (double& v : odd_sum) v *= 0.3183098861837907;
  const auto odd = dense_tensor_split_u16(odd_sum, 15, 15, 0.0);
  REQUIRE(odd.has_value());
  CHECK(odd->holds);
  const auto near_tie = dense_tensor_split_u16({0.5 - std::ldexp(3.0, -42), 0.0}, 2, 1, 0.0);
  REQUIRE(near_tie.has_value());
  CHECK(near_tie->bound < 1e-6);
  CHECK_FALSE(near_tie->holds);
  std::vector<double> spike(31 * 31, 1e-3);
  spike[480] = 1.0;
  const auto refused = dense_tensor_split_u16(spike, 31, 31, 0.0);
  REQUIRE(refused.has_value());
  CHECK(refused->bound > cuconv::filter::kSeparableErrorLimit);
  CHECK_FALSE(refused->holds);
  // Sums that may pass int's range (cvRound's INT_MIN in filter2D) are left to `fast`, even exact ones.
  std::vector<double> centre(9, 0.0);
  centre[4] = 32769.0;  // 65535 * 32769 >= 2^31
  CHECK_FALSE(dense_tensor_split_u16(centre, 3, 3, 0.0)->holds);
  centre[4] = 32768.0;
  CHECK(dense_tensor_split_u16(centre, 3, 3, 0.0)->holds);
  CHECK_FALSE(dense_tensor_split_u16(centre, 3, 3, 3e6)->holds);
  CHECK_FALSE(dense_tensor_split_u16(std::vector<double>(9, 0.0), 3, 3, 0.0).has_value());
}

TEST_CASE("separable: filter_splits answers a repeated request from the kept ones, bit for bit") {
  using namespace cuconv::filter;
  // A rank-1 blur with non-dyadic weights: 8-bit requests get both the factors and the dense split.
  const cuconv::Filter blur = cuconv::load_filter("gaussian:2,0.937");
  const std::vector<double>& w = blur.weights;
  const auto same_answers = [](const FilterSplits& a, const FilterSplits& b) {
    REQUIRE(a.separable.has_value() == b.separable.has_value());
    REQUIRE(a.dense_tensor.has_value() == b.dense_tensor.has_value());
    if (a.separable) {
      CHECK(a.separable->horizontal == b.separable->horizontal);
      CHECK(a.separable->vertical == b.separable->vertical);
      CHECK(a.separable->horizontal_wide == b.separable->horizontal_wide);
      CHECK(a.separable->vertical_wide == b.separable->vertical_wide);
      CHECK(a.separable->exact == b.separable->exact);
      CHECK(a.separable->fits_float_rank1 == b.separable->fits_float_rank1);
      CHECK(a.separable->fits_tensor_split == b.separable->fits_tensor_split);
      CHECK(a.separable->fits_tensor_mma_split == b.separable->fits_tensor_mma_split);
      CHECK(a.separable->fits_double_rank1 == b.separable->fits_double_rank1);
    }
    if (a.dense_tensor) {
      CHECK(a.dense_tensor->exponent == b.dense_tensor->exponent);
      CHECK(a.dense_tensor->digits == b.dense_tensor->digits);
      CHECK(a.dense_tensor->bound == b.dense_tensor->bound);
      CHECK(a.dense_tensor->holds == b.dense_tensor->holds);
    }
  };
  const auto computed = [] { return filter_split_computations(); };

  const auto before = computed();
  const FilterSplits first = filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, 0.0);
  CHECK(computed() == before + 1);
  REQUIRE(first.separable.has_value());
  REQUIRE(first.dense_tensor.has_value());
  same_answers(first, {separable_for(w, blur.width, blur.height, CV_8U, CV_8U, 0.0),
                       dense_tensor_for(w, blur.width, blur.height, CV_8U, CV_8U, 0.0)});
  same_answers(filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, 0.0), first);
  CHECK(computed() == before + 1);

  // Everything the answers depend on is part of the request: delta (its sign bit too), depths and
  // each weight's bits.
  std::vector<double> nudged = w;
  nudged[3] = std::nextafter(nudged[3], 1.0);
  const FilterSplits other_delta = filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, 0.25);
  const FilterSplits negative_zero = filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, -0.0);
  const FilterSplits wide = filter_splits(w, blur.width, blur.height, CV_16U, CV_16U, 0.0);
  const FilterSplits other_weight = filter_splits(nudged, blur.width, blur.height, CV_8U, CV_8U, 0.0);
  CHECK(computed() == before + 5);
  same_answers(other_delta, {separable_for(w, blur.width, blur.height, CV_8U, CV_8U, 0.25),
                             dense_tensor_for(w, blur.width, blur.height, CV_8U, CV_8U, 0.25)});
  REQUIRE(other_delta.separable.has_value());
  REQUIRE(other_delta.dense_tensor.has_value());
  CHECK(other_delta.dense_tensor->bound != first.dense_tensor->bound);  // the delta's rounding is in the bound
  same_answers(wide, {separable_for(w, blur.width, blur.height, CV_16U, CV_16U, 0.0),
                      dense_tensor_for(w, blur.width, blur.height, CV_16U, CV_16U, 0.0)});
  REQUIRE(wide.separable.has_value());
  CHECK(wide.separable->fits_double_rank1 != first.separable->fits_double_rank1);  // a different answer, not the 8-bit one
  same_answers(other_weight, {separable_for(nudged, blur.width, blur.height, CV_8U, CV_8U, 0.0),
                              dense_tensor_for(nudged, blur.width, blur.height, CV_8U, CV_8U, 0.0)});
  same_answers(negative_zero, first);

  // kFilterSplitsKept newer distinct requests push the first one out.
  for (std::size_t k = 0; k < kFilterSplitsKept; ++k)
    (void)filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, 1.0 + static_cast<double>(k));
  const auto full = computed();
  CHECK(full == before + 5 + kFilterSplitsKept);
  same_answers(filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, 0.0), first);
  CHECK(computed() == full + 1);

  // Threads asking at once (each with its own kept answers) get the same answers as this one.
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 40; ++k) {
        const double delta = (k + i) % 3 == 0 ? 0.0 : 0.25;
        const FilterSplits s = filter_splits(w, blur.width, blur.height, CV_8U, CV_8U, delta);
        const FilterSplits& want = delta == 0.0 ? first : other_delta;
        if (!s.separable || !s.dense_tensor || s.separable->horizontal != want.separable->horizontal ||
            s.dense_tensor->bound != want.dense_tensor->bound)
          ++mismatches[static_cast<std::size_t>(i)];
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(mismatches == std::vector<int>(4, 0));
}
