// SPDX-License-Identifier: Apache-2.0
// The tensor variant's rank-1 split: exact for dyadic presets, the both-passes kernel's FP16
// scales, and its arithmetic, emulated, within the bound.
#include "filter/splits.hpp"

#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core/hal/interface.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
          x[static_cast<std::size_t>(i)] = window % 10 == 0   ? 255
                                           : window % 10 == 1 ? 255 * ((i + i / k) % 2)
                                                              : rng.uniform(0, 256);
        double exact = delta;
        for (int i = 0; i < k * k; ++i)
          exact += f.weights[static_cast<std::size_t>(i)] * x[static_cast<std::size_t>(i)];
        // Row sums: the two exact accumulators, one float addition, the FP16 split.
        std::vector<double> r_hi(static_cast<std::size_t>(k)), r_lo(static_cast<std::size_t>(k));
        for (int i = 0; i < k; ++i) {
          double acc_hi = 0.0;
          double acc_lo = 0.0;
          for (int j = 0; j < k; ++j) {
            const int px = x[static_cast<std::size_t>(i) * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)];
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
        const float sum = steps == 2
                              ? static_cast<float>(acc[0]) + static_cast<float>(acc[2])
                              : (static_cast<float>(acc[0]) + static_cast<float>(acc[1])) + static_cast<float>(acc[2]);
        const double y = std::fma(static_cast<double>(sum), static_cast<double>(scale),
                                  static_cast<double>(static_cast<float>(delta)));
        worst = std::max(worst, std::abs(static_cast<double>(static_cast<float>(y)) - exact));
      }
      INFO(f.origin << " " << k << "x" << k << " delta " << delta << ": largest error " << worst << ", bound "
                    << bound);
      CHECK(worst <= bound);
      CHECK(worst > 0.0);  // the emulation rounds somewhere: the check can fail
      worst_ratio = std::max(worst_ratio, worst / bound);
    }
  }
  MESSAGE("both-passes emulation: largest error " << worst_ratio << " of the bound");
}
