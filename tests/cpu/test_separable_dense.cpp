// SPDX-License-Identifier: Apache-2.0
// The tensor variant's splits of filters that are not rank 1: the dense split's exact digit sums,
// and the float and 16-bit splits' bounds on the kernel's block floating point arithmetic.
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
  const auto digits_of = [](long long v, int(&a)[3]) {
    for (int& d : a) {
      d = static_cast<int>(((v % 256) + 256 + 128) % 256 - 128);
      v = (v - d) / 256;
    }
  };
  cv::RNG rng(2027);
  const std::vector<SplitCase> filters =
      split_cases(rng, {{3, 3}, {5, 5}, {9, 9}, {15, 15}, {17, 17}, {31, 31}, {31, 1}, {7, 20}},
                  {"gaussian:7,3", "gaussian:15,5", "box:31", "gauss5"}, false);
  for (const auto& [case_name, weights, kw, kh] : filters) {
    const std::string what = case_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
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
      const float got =
          std::fma(sum * std::ldexp(1.0f, out / 2), std::ldexp(1.0f, out - out / 2), static_cast<float>(delta));
      worst = std::max(worst, std::abs(static_cast<double>(got) - exact) / (weight_sum * largest + std::abs(delta)));
    }
    CHECK(worst <= split->bound);
    CHECK(split->bound <= cuconv::filter::kDenseFloatErrorLimit);
  }
  // A spike among 960 weights of 1e-3: each small weight keeps only its low digit, whose products
  // with the pixels' low digits are dropped, so the bound passes the limit and `tensor` leaves it.
  std::vector<double> spike(std::size_t{31} * 31, 1e-3);
  spike[480] = 1.0;
  const auto refused = dense_tensor_split_float(spike, 31, 31);
  REQUIRE(refused.has_value());
  CHECK(refused->bound > cuconv::filter::kDenseFloatErrorLimit);
  CHECK_FALSE(refused->holds);
  CHECK_FALSE(dense_tensor_split_float(std::vector<double>(9, 0.0), 3, 3).has_value());
  CHECK_FALSE(dense_tensor_split_float({1.0, std::nan("")}, 2, 1).has_value());
  // dense_tensor_for: 8-bit, float and 16-bit up to 31 (8-bit past 17 on the planes kernel),
  // nothing for other depths.
  const std::vector<double> box19(std::size_t{19} * 19, 1.0 / 361);
  CHECK(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_8U, CV_8U, 0.0)->digits.size() == 3);
  CHECK_FALSE(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_8U, CV_16U, 0.0).has_value());
  CHECK(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_32F, CV_32F, 0.0).has_value());
  CHECK(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_16U, CV_16U, 0.0)->digits.size() == 4);
  CHECK_FALSE(cuconv::filter::dense_tensor_for(box19, 19, 19, CV_16U, CV_32F, 0.0).has_value());
  const std::vector<double> box33(std::size_t{33} * 33, 1.0 / 1089);
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
    const auto& [case_name, weights, kw, kh] = filters[n];
    const std::string what = case_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
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
  std::vector<double> spike(std::size_t{31} * 31, 1e-3);
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
