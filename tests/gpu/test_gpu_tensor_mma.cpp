// SPDX-License-Identifier: Apache-2.0
// `tensor`'s both-passes kernel (kernels/tensor_separable_mma.cuh): rank-1 8-bit filters with the
// row sums and the column sums on tensor cores. First the accumulation model its error bound
// assumes (tensor_mma_error_bound: an MMA's FP32 result within (k + 1) 2^-23 of its largest term,
// k = 16) is checked on this device; then the kernel is judged against the exact sum (double
// precision, rounded half to even, saturated; tests/support/exact_sum.hpp): in a sweep of radii 4-8,
// 1/3/4 channels, borders, deltas (the one-rounding and the general epilogue) and the kernel's
// tile edges (256 pixels a block at one channel, 64 at three and four, 16-row steps, strips), every
// value within 0.5 + the kernel's bound of it and the pass rule over the sweep; on photos and flat
// areas at every byte value the pass rule per image; unaligned rows bit for bit. Outputs are
// poisoned before every run; launch counters show which kernel ran.
#include "exact_sum.hpp"
#include "filter/splits.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu_seams.hpp"
#include "mma_probe.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace cuconv;
using cuconv::test::check_exact;
using cuconv::test::check_within_bound;
using cuconv::test::kAllBorders;
using cuconv::test::random_image;
using cuconv::test::sample;

namespace {

/// The value of FP16 bits.
double half_value(std::uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (bits & 0x8000) != 0 ? -magnitude : magnitude;
}

/// FP16 bits of a random normal value with exponent in [low, high] (2^e .. 2^(e+1)), random sign
/// unless `positive`.
std::uint16_t random_half(std::mt19937_64& rng, int low, int high, bool positive) {
  const int e = std::uniform_int_distribution<int>(low, high)(rng);
  const auto mantissa = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(0, 1023)(rng));
  const bool negative = !positive && (rng() & 1) != 0;
  return static_cast<std::uint16_t>((negative ? 0x8000 : 0) | ((e + 15) << 10) | mantissa);
}

/// A centred (2R+1)^2 rank-1 filter with signed random factors, summing to about one.
Filter rank_one(int radius, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.1, 1.0);
  const int k = 2 * radius + 1;
  std::vector<double> h(static_cast<std::size_t>(k));
  std::vector<double> v(static_cast<std::size_t>(k));
  double sh = 0.0;
  double sv = 0.0;
  for (int i = 0; i < k; ++i) {
    sh += h[static_cast<std::size_t>(i)] = u(rng);
    sv += v[static_cast<std::size_t>(i)] = u(rng);
  }
  Filter f;
  f.width = f.height = k;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j)
      f.weights.push_back(v[static_cast<std::size_t>(i)] / sv * h[static_cast<std::size_t>(j)] / sh);
  f.origin = "rank-1 " + std::to_string(k) + "x" + std::to_string(k);
  return f;
}

}  // namespace

TEST_CASE("gpu tensor mma: the tensor cores' FP32 accumulation stays within the bound's model") {
  REQUIRE(gpu::device_has_mma());
  constexpr std::size_t kProblems = 2048;
  std::mt19937_64 rng(2611);
  // Operand shapes: signs and exponents spread over 2^24; a large C; one large product beside small
  // ones far below its last bit; positive products only; cancelling pairs.
  const char* shapes[] = {
      "spread",          "spread with C", "one large and small ones", "positive spread", "large C and small products",
      "cancelling pairs"};
  double worst_overall = 0.0;
  for (int shape = 0; shape < 6; ++shape) {
    std::vector<std::uint16_t> a(256 * kProblems);
    std::vector<std::uint16_t> b(128 * kProblems);
    std::vector<float> c(128 * kProblems, 0.0f);
    for (std::size_t p = 0; p < kProblems; ++p) {
      for (std::size_t i = 0; i < 256; ++i) {
        auto& x = a[256 * p + i];
        if (shape == 2)
          x = i % 16 == 0 ? 0x3C00 : random_half(rng, -15, -10, false);
        else if (shape == 4)
          x = random_half(rng, -13, -12, true);
        else if (shape == 5)
          x = i % 2 == 0 ? random_half(rng, -2, 2, true) : static_cast<std::uint16_t>(0);
        else
          x = random_half(rng, -6, 6, shape == 3);
      }
      if (shape == 5)
        for (std::size_t i = 1; i < 256; i += 2) a[256 * p + i] = a[256 * p + i - 1] ^ 0x8000;
      for (std::size_t i = 0; i < 128; ++i) {
        auto& x = b[128 * p + i];
        if (shape == 2)
          x = i % 16 == 0 ? 0x3C00 : random_half(rng, -15, -10, false);
        else if (shape == 4)
          x = random_half(rng, -13, -12, true);
        else
          x = random_half(rng, shape == 5 ? -2 : -6, shape == 5 ? 2 : 6, shape == 3 || shape == 5);
      }
      for (std::size_t i = 0; i < 128; ++i) {
        float& x = c[128 * p + i];
        if (shape == 1) x = static_cast<float>(half_value(random_half(rng, -2, 10, false)));
        if (shape == 4) x = static_cast<float>(1.0 + std::uniform_real_distribution<double>(0, 1)(rng));
      }
    }
    const std::vector<float> d = cuconv::test::mma_f16_f32_on_device(a, b, c, static_cast<int>(kProblems));
    double worst = 0.0;  // error / (2^-23 max |term|)
    for (std::size_t p = 0; p < kProblems; ++p)
      for (std::size_t m = 0; m < 16; ++m)
        for (std::size_t n = 0; n < 8; ++n) {
          const float cv_ = c[128 * p + 8 * m + n];
          long double exact = cv_;
          double largest = std::abs(static_cast<double>(cv_));
          for (std::size_t k = 0; k < 16; ++k) {
            const double product = half_value(a[256 * p + 16 * m + k]) * half_value(b[128 * p + 16 * n + k]);
            exact += product;
            largest = std::max(largest, std::abs(product));
          }
          const double error = std::abs(static_cast<double>(d[128 * p + 8 * m + n] - exact));
          if (largest > 0.0) worst = std::max(worst, error / std::ldexp(largest, -23));
        }
    INFO(shapes[shape] << ": largest error " << worst << " x 2^-23 of the largest term");
    CHECK(worst <= 17.0);
    worst_overall = std::max(worst_overall, worst);
  }
  MESSAGE("largest MMA accumulation error: " << worst_overall << " x 2^-23 of the largest term (model: 17)");
  // The probe reaches inexact sums: a check that could not fail would be no check.
  CHECK(worst_overall > 1.0);
}

TEST_CASE("gpu tensor mma: both passes on tensor cores meet the pass rule against the exact sum") {
  // Tile edges of the kernel: 256 pixels a block at one channel, 64 at three and four, 16-row
  // steps, strips of 32..128 rows; images narrower than the halo, and widths that are no multiple of 16.
  const std::pair<int, int> sizes[] = {{1, 1},    {7, 5},    {33, 17},   {64, 16},  {65, 47},   {85, 16},   {86, 31},
                                       {256, 33}, {257, 64}, {1023, 97}, {1025, 3}, {600, 129}, {2049, 18}, {4099, 40}};
  std::vector<Filter> filters;
  // Radii 4-8 read two 16-row steps of row sums, 9-15 three (the older two from shared memory).
  for (const char* spec :
       {"gaussian:4,1.9", "gaussian:5,2.2", "gaussian:6,2.5", "gaussian:7,3", "gaussian:8,3.5", "box:9", "box:13",
        "box:17", "gaussian:9,3", "gaussian:11,3.5", "gaussian:13,4.5", "gaussian:15,5", "box:19", "box:31"})
    filters.push_back(load_filter(spec));
  for (int radius : {4, 6, 8, 10, 15}) filters.push_back(rank_one(radius, 90 + static_cast<std::uint64_t>(radius)));
  const std::uint64_t tensor_before = cuconv::test::rank1_tensor_launches();
  const std::uint64_t mma_before = cuconv::test::launches(gpu::KernelPath::tensor_rank1_mma);
  int index = 0;
  cuconv::test::RuleCount total;
  for (const Filter& f : filters) {
    for (int channels : {1, 3, 4}) {
      for (Border border : kAllBorders) {
        ++index;
        const auto [cols, rows] = sizes[static_cast<std::size_t>(index * 5 + channels) % std::size(sizes)];
        const cv::Mat src = random_image(rows, cols, CV_8U, channels, 7300 + static_cast<std::uint64_t>(index));
        ConvolveOptions o;
        o.border = border;
        o.border_value = border == Border::constant ? 201 : 0;
        if (index % 7 == 0) o.delta = -3.25;  // the general epilogue (a fraction in delta)
        if (index % 7 == 3) o.delta = 3;      // one rounding with an integral delta
        const auto factors = filter::separable_for(f.weights, f.width, f.height, CV_8U, CV_8U, o.delta + f.offset);
        REQUIRE(factors.has_value());
        CAPTURE(f.origin);
        REQUIRE(factors->fits_tensor_mma_split);
        const std::string what = f.origin + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                                 std::to_string(channels) + " " + std::string(to_string(border)) + " delta " +
                                 std::to_string(o.delta);
        const auto split = filter::tensor_split(factors->horizontal);
        REQUIRE(split.has_value());
        const auto scales = filter::tensor_mma_scales(*split, factors->vertical);
        REQUIRE(scales.has_value());
        const double bound = filter::tensor_mma_error_bound(*factors, *split, *scales, f.weights, o.delta + f.offset);
        CHECK(check_within_bound(src, f, o, what, Variant::tensor, bound, total) == Variant::tensor);
      }
    }
  }
  // The pass rule's 0.1% over the sweep's values (a single image may be a few hundred values).
  INFO(total.off_by_one << " of " << total.values << " values off by one");
  CHECK(static_cast<double>(total.off_by_one) <= 0.001 * static_cast<double>(total.values));
  // Every run took the both-passes kernel.
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_rank1_mma) - mma_before == static_cast<std::uint64_t>(index));
  CHECK(cuconv::test::rank1_tensor_launches() - tensor_before == static_cast<std::uint64_t>(index));
}

TEST_CASE("gpu tensor mma: photos, flat areas, unaligned rows, and what it leaves to the float column sums") {
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo.empty());
  cv::Mat gray;
  cv::extractChannel(photo, gray, 1);
  cv::Mat flat(16 * 20, 16 * 20, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 20, (v / 16) * 20, 20, 20)).setTo(v);
  const std::uint64_t mma_before = cuconv::test::launches(gpu::KernelPath::tensor_rank1_mma);
  int runs = 0;
  for (const char* spec : {"gaussian:7,2.5", "gaussian:4,1.8", "box:15", "gaussian:15,5"}) {
    const Filter f = load_filter(spec);
    for (const cv::Mat* image : std::initializer_list<const cv::Mat*>{&photo, &gray, &flat}) {
      ConvolveOptions o;
      CHECK(check_exact(*image, f, o,
                        std::string(spec) + " on " + std::to_string(image->cols) + "x" + std::to_string(image->rows) +
                            "x" + std::to_string(image->channels()),
                        Variant::tensor) == Variant::tensor);
      ++runs;
    }
  }
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_rank1_mma) - mma_before == static_cast<std::uint64_t>(runs));

  // Rows off a 16-byte boundary (the staging through the column map, byte stores) give the aligned
  // path's result bit for bit.
  GpuWorkspace workspace;
  for (int channels : {1, 3, 4}) {
    for (const char* spec : {"gaussian:6,2.5", "gaussian:12,4"})
      cuconv::test::check_unaligned_rows(
          random_image(45, 301, CV_8U, channels, 81 + static_cast<std::uint64_t>(channels)), load_filter(spec),
          cuconv::test::launches_of<gpu::KernelPath::tensor_rank1_mma>, workspace, spec);
  }

  // Left to the float column sums (kernels/tensor_separable.cuh): radii below 4, and a sharp
  // gaussian whose largest weight makes the tensor cores' accumulation bound pass the rule.
  for (const char* spec : {"gaussian:3,1.4", "gaussian:4,0.9"}) {
    const Filter f = load_filter(spec);
    const auto factors = filter::separable_for(f.weights, f.width, f.height, CV_8U, CV_8U, f.offset);
    REQUIRE(factors.has_value());
    CHECK(factors->fits_tensor_split);
    const std::uint64_t tensor_before = cuconv::test::rank1_tensor_launches();
    const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::tensor_rank1_mma);
    ConvolveOptions o;
    CHECK(check_exact(photo, f, o, spec, Variant::tensor) == Variant::tensor);
    CHECK(cuconv::test::rank1_tensor_launches() - tensor_before == 1u);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_rank1_mma) == before);
  }
  const Filter sharp = load_filter("gaussian:4,0.9");
  CHECK_FALSE(filter::separable_for(sharp.weights, 9, 9, CV_8U, CV_8U, 0.0)->fits_tensor_mma_split);
}
