// SPDX-License-Identifier: Apache-2.0
// Rank-1 detection (src/filter/rank1_splits.cpp): which filters `fast` runs as two 1-D passes,
// the factors' reconstruction and error bounds, 16-bit outputs' double sums, and filter_splits'
// kept answers.
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
  CHECK(usable("gauss5", CV_8U, CV_8U));       // dyadic factors: exact sums
  CHECK(usable("gauss5", CV_8U, CV_8U, 0.5));  // exact sums round ties as the direct sum
  CHECK(usable("sobel-x", CV_8U, CV_16S));
  CHECK(usable("gaussian:7,2.5", CV_8U, CV_8U));       // inexact factors, error bound far below a tie
  CHECK(usable("gaussian:7,3", CV_8U, CV_16U));        // 15x15
  CHECK_FALSE(usable("gaussian:11,4", CV_8U, CV_8U));  // 23x23: more float steps than the bound allows (fast)
  CHECK(usable("box:3", CV_8U, CV_8U));
  CHECK_FALSE(usable("box:3", CV_8U, CV_8U, 0.5));  // flat areas would sum to ties
  CHECK_FALSE(usable("box:3", CV_8U, CV_8U, 1.5));
  CHECK_FALSE(usable("gaussian:7,2.5", CV_8U, CV_8U, 100.5));
  CHECK_FALSE(usable("gauss5", CV_16U, CV_16U));          // 16-bit sums need more than float's 24 bits
  CHECK_FALSE(usable("gaussian:7,2.5", CV_16U, CV_16U));  // (they go to the double sums below)
  CHECK(usable("gaussian:7,2.5", CV_8U, CV_32F));         // float outputs: the relative rule
  CHECK(usable("box:3", CV_32F, CV_32F));
  CHECK_FALSE(usable("sharpen", CV_32F, CV_32F));  // not rank 1
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
  CHECK(wide.separable->fits_double_rank1 !=
        first.separable->fits_double_rank1);  // a different answer, not the 8-bit one
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
