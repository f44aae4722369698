// SPDX-License-Identifier: Apache-2.0
// `fast`'s tile kernel for tiny images (kernels/fast_tile.cuh): which images take it, its results
// against cv::filter2D's reference under the pass rule (its float sums are filter2D's, so 16-bit
// results differ from the exact sum where filter2D's do), bit for bit against fast_kernel's dense
// sums (the same FMA order) on the same input, and its double sums of 16-bit rank-1 filters from
// 15x15 bit for bit against the exact sum, with every border rule, anchor, channel count, depth
// and radius of its list. Outputs are poisoned before every run.
#include "exact_sum.hpp"
#include "filter/splits.hpp"
#include "gpu/launch/launch.hpp"  // fast_wide_runs
#include "gpu_seams.hpp"
#include "skip.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace cuconv;
using cuconv::test::kAllBorders;
using cuconv::test::launches;
using cuconv::test::random_filter;
using cuconv::test::random_image;
using cuconv::test::run_poisoned;
using gpu::KernelPath;

namespace {

/// The radii of src/gpu/launch/dispatch.cuh's FastTileRadii (1 .. 15).
constexpr int kTileRadii = 15;

/// `fast` (or `asked`, which must run it) on `src` must take the tile kernel, meet the pass rule
/// and, where `dense` (the filter takes no separable sums there), equal fast_kernel's or the
/// generic kernel's run bit for bit; where `exact` (the double sums), equal the exact sum bit for
/// bit (a kept alpha channel aside).
void check_tile(const cv::Mat& src, const Filter& f, const ConvolveOptions& o, bool dense, const std::string& what,
                Variant asked = Variant::fast, bool exact = false) {
  INFO(what);
  const std::uint64_t before = launches(KernelPath::fast_tile);
  const auto [got, ran] = run_poisoned(src, f, o, asked);
  REQUIRE(got.variant_used == Variant::fast);
  CHECK(launches(KernelPath::fast_tile) == before + 1);
  const ComparisonStats s = cuconv::test::compare_with_filter2d(got.image, src, f, ran, Variant::fast);
  INFO("max diff ", s.max_abs_difference, ", ", s.differing_values, "/", s.total_values, " differ");
  CHECK(s.within_tolerance);
  if (exact) {
    const cv::Mat expected = cuconv::test::exact_sum(src, f, ran.anchor_x, ran.anchor_y, ran.border, ran.border_value,
                                                     ran.delta + f.offset, got.image.depth());
    std::vector<cv::Mat> got_channels;
    std::vector<cv::Mat> expected_channels;
    cv::split(got.image, got_channels);
    cv::split(expected, expected_channels);
    const int compared = ran.keep_alpha && src.channels() == 4 ? 3 : src.channels();
    for (int c = 0; c < compared; ++c)
      CHECK(cuconv::test::bit_equal(got_channels[static_cast<std::size_t>(c)],
                                    expected_channels[static_cast<std::size_t>(c)]));
  }
  if (dense) {
    const cuconv::test::PathOff off(KernelPath::fast_tile);
    const cv::Mat strips = run_poisoned(src, f, o, Variant::fast).first.image;
    CHECK(launches(KernelPath::fast_tile) == before + 1);
    CHECK(cuconv::test::bit_equal(strips, got.image));
  }
}

}  // namespace

TEST_CASE("gpu: fast's tile kernel takes tiny images up to its rule's tile count, and no larger ones") {
  if (!cuconv::test::variant_tested(Variant::fast)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fast");
    return;
  }
  // (cols, rows, channels, radius, takes the tile kernel): 256 tiles of 32 elements x 8 rows at
  // 3x3 and 5x5, 1024 from 7x7 and 1024 tiles' worth of 17x17 taps (src/gpu/launch/fast_rules.cuh);
  // 33x33 never.
  struct Case {
    int cols, rows, channels, radius;
    bool tiles;
  };
  const Case cases[] = {
      {64, 64, 1, 1, true},     {256, 256, 1, 2, true},  {257, 256, 1, 2, false}, {512, 512, 1, 4, true},
      {512, 512, 1, 3, true},   {513, 512, 1, 4, false}, {64, 64, 4, 4, true},    {86, 64, 3, 2, true},
      {64, 64, 1, 5, true},     {1024, 256, 1, 4, true}, {1025, 8, 1, 1, true},   {8193, 8, 1, 1, false},
      {512, 512, 1, 7, true},   {513, 512, 1, 6, false}, {64, 64, 3, 7, true},    {513, 512, 1, 3, false},
      {512, 512, 1, 2, false},  {64, 64, 1, 8, true},    {512, 512, 1, 9, false}, {128, 64, 1, 15, true},
      {256, 256, 3, 15, false}, {256, 256, 1, 15, true}, {64, 64, 1, 16, false}};
  for (const Case& c : cases) {
    INFO(c.cols, "x", c.rows, "x", c.channels, " radius ", c.radius);
    const cv::Mat src = random_image(c.rows, c.cols, CV_32F, c.channels, 77);
    const std::uint64_t before = launches(KernelPath::fast_tile);
    (void)run_poisoned(src, random_filter(2 * c.radius + 1, 2 * c.radius + 1, 5), ConvolveOptions{}, Variant::fast);
    CHECK(launches(KernelPath::fast_tile) - before == (c.tiles ? 1u : 0u));
  }
  // 16-bit rank-1 filters from 15x15 (summed in double): the tile kernel up to half the float
  // rule's taps (fast_tile_double_applies), the double separable kernel past it.
  struct Double {
    int side, radius;
    bool tiles;
  };
  for (const Double& c : {Double{128, 7, true}, Double{128, 15, true}, Double{256, 7, true}, Double{256, 15, false},
                          Double{512, 7, false}}) {
    INFO("16-bit gaussian ", 2 * c.radius + 1, "x", 2 * c.radius + 1, " on ", c.side, "^2");
    const cv::Mat src = random_image(c.side, c.side, CV_16U, 1, 78);
    const Filter g = load_filter(c.radius == 7 ? "gaussian:7,3" : "gaussian:15,5");
    const std::uint64_t tiles_before = launches(KernelPath::fast_tile);
    const std::uint64_t wide_before = launches(KernelPath::fast_double_rank1);
    (void)run_poisoned(src, g, ConvolveOptions{}, Variant::fast);
    CHECK(launches(KernelPath::fast_tile) - tiles_before == (c.tiles ? 1u : 0u));
    CHECK(launches(KernelPath::fast_double_rank1) - wide_before == (c.tiles ? 0u : 1u));
  }
  // Mixed depths and 16S outputs have no tile instance: the generic kernel serves them.
  const std::uint64_t before = launches(KernelPath::fast_tile);
  ConvolveOptions to_float;
  to_float.depth = Depth::f32;
  (void)run_poisoned(random_image(16, 16, CV_8U, 1, 3), random_filter(3, 3, 3), to_float, Variant::fast);
  CHECK(launches(KernelPath::fast_tile) == before);
}

TEST_CASE("gpu: fast's tile kernel on tiny images: every border, anchor, channel count, depth and radius") {
  if (!cuconv::test::variant_tested(Variant::fast)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fast");
    return;
  }
  // Sizes inside one tile, on a tile's edges (32 elements, 8 rows: 33 x 3 = 99 elements crosses
  // three), narrower and shorter than the filter, and the Python package's 64 x 64.
  const std::pair<int, int> sizes[] = {{1, 1},  {2, 3},   {5, 9},   {11, 8},  {32, 8},  {33, 9},
                                       {31, 7}, {64, 64}, {17, 40}, {100, 5}, {43, 31}, {129, 15}};
  const int stride = cuconv::test::sweep_stride();
  int index = 0;
  for (int r = 1; r <= kTileRadii; ++r) {
    const int k = 2 * r + 1;
    for (int depth : {CV_8U, CV_16U, CV_32F}) {
      for (int channels : {1, 3, 4}) {
        for (Border border : kAllBorders) {
          if (index++ % stride != 0) continue;
          const auto [cols, rows] = sizes[static_cast<std::size_t>(index) % std::size(sizes)];
          const cv::Mat src = random_image(rows, cols, depth, channels, 700 + static_cast<std::uint64_t>(index));
          ConvolveOptions o = cuconv::test::sweep_case_options(border, depth, channels, index);
          // Centred, the top-left corner, and off-centre both ways (fast_kernel takes only
          // centred windows: the generic kernel sums the others, in the same order).
          const int anchors[][2] = {{r, r}, {0, 0}, {k - 1, 1}, {1, k - 1}};
          o.anchor_x = anchors[index % 4][0];
          o.anchor_y = anchors[index % 4][1];
          const std::string what = "tile " + std::to_string(k) + "x" + std::to_string(k) + " " + std::to_string(cols) +
                                   "x" + std::to_string(rows) + "x" + std::to_string(channels) + " depth " +
                                   std::to_string(depth) + " " + std::string(to_string(border)) + " anchor " +
                                   std::to_string(o.anchor_x) + "," + std::to_string(o.anchor_y);
          check_tile(src, random_filter(k, k, static_cast<std::uint64_t>(index)), o, true, what);
          // A rank-1 filter, which fast_kernel would sum separably: the tile kernel sums it dense,
          // a 16-bit one from 15x15 whose double sums keep the rule in double: the exact sum. One
          // border of each radius, depth and channel count, a different one each time (index % 5
          // alone fell on wrap every time).
          if (index % 5 == (index / 5) % 5) {
            const Filter g = load_filter("gaussian:" + std::to_string(r) + "," + std::to_string(0.5 * r + 0.4));
            const filter::FilterSplits splits =
                filter::filter_splits(g.weights, k, k, depth, depth, o.delta + g.offset);
            const bool in_double = gpu::fast_wide_runs(depth == CV_16U, k, k, channels,
                                                       splits.separable && splits.separable->fits_double_rank1);
            check_tile(src, g, o, false, what + " gaussian", Variant::fast, in_double);
          }
        }
      }
    }
  }
}

TEST_CASE("gpu: auto runs tiny 8-bit images that its rules for large ones send to tensor on the tile kernel") {
  if (!cuconv::test::variant_tested(Variant::fast)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fast");
    return;
  }
  // Rank-1 7x7 and 9x9, dense past 5x5, colour 5x5: `tensor` on large images, `fast`'s tile
  // kernel where it runs (src/convolve/choose_variant.cpp), under the same pass rule.
  const std::pair<const char*, Filter> filters[] = {{"gaussian 7x7", load_filter("gaussian:3,1.5")},
                                                    {"gaussian 9x9", load_filter("gaussian:4,2")},
                                                    {"dense 7x7", random_filter(7, 7, 41)},
                                                    {"dense 5x5", random_filter(5, 5, 42)}};
  int index = 0;
  for (const auto& [name, f] : filters) {
    for (int channels : {1, 3, 4}) {
      for (const auto& [cols, rows] : {std::pair{64, 64}, std::pair{100, 60}}) {
        const cv::Mat src = random_image(rows, cols, CV_8U, channels, 900 + static_cast<std::uint64_t>(++index));
        check_tile(src, f, ConvolveOptions{}, false,
                   std::string("auto ") + name + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                       std::to_string(channels),
                   Variant::automatic);
      }
    }
  }
}
