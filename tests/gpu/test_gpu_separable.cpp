// SPDX-License-Identifier: Apache-2.0
// `fast` on rank-1 filters with integer outputs whose factors do not give exact float sums
// (gaussian:R,SIGMA, box:3, ...) and 16-bit rank-1 filters summed in double: judged against the
// exact sum (double precision, rounded half to even, saturated; tests/support/exact_sum.hpp) under the
// integer pass rule, not against cv::filter2D's own float sum. Cases cover output depths,
// channel counts, borders, anchors, fast's tile-edge sizes, real photos, flat areas at every byte
// value and a delta that puts flat areas on a tie. Outputs are poisoned on the device before
// every run, so an unwritten pixel fails.
#include "exact_sum.hpp"
#include "filter/splits.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace cuconv;
using cuconv::test::check_exact;
using cuconv::test::compare_exact;
using cuconv::test::exact_sum;
using cuconv::test::kAllBorders;
using cuconv::test::random_image;
using cuconv::test::RuleCount;
using cuconv::test::sample;

namespace {

bool takes_separable(const Filter& f, int in_depth, int out_depth, double delta) {
  return filter::separable_for(f.weights, f.width, f.height, in_depth, out_depth, delta).has_value();
}

Depth depth_option(int depth) {
  switch (depth) {
    case CV_16U:
      return Depth::u16;
    case CV_16S:
      return Depth::s16;
    default:
      return Depth::u8;
  }
}

}  // namespace

TEST_CASE("gpu separable: inexact rank-1 filters on 8-bit input meet the pass rule against the exact sum") {
  // fast's tile edges in elements (warp 32 x kVec, block 128 x kVec) for 1, 3 and 4 channels.
  const std::pair<int, int> sizes[] = {{1, 1},     {5, 31},   {43, 32}, {128, 33},  {129, 129}, {171, 127},
                                       {172, 257}, {255, 65}, {257, 3}, {513, 255}, {683, 5},   {2047, 3}};
  const char* specs[] = {"gaussian:1,0.8", "gaussian:2,1.1", "gaussian:3,1.5", "gaussian:5,2.2",
                         "gaussian:6,2.5", "gaussian:7,3",   "box:3",          "box:5"};
  int index = 0;
  int separable_runs = 0;
  for (const char* spec : specs) {
    const Filter f = load_filter(spec);
    for (int out_depth : {CV_8U, CV_16U, CV_16S}) {
      for (int channels : {1, 3, 4}) {
        for (Border border : kAllBorders) {
          ++index;
          const auto [cols, rows] = sizes[static_cast<std::size_t>(index) % std::size(sizes)];
          const cv::Mat src = random_image(rows, cols, CV_8U, channels, 9000 + static_cast<std::uint64_t>(index));
          ConvolveOptions o;
          o.depth = depth_option(out_depth);
          o.border = border;
          o.border_value = border == Border::constant ? 77 : 0;
          // Off-centre anchors leave the fast path (auto picks a dense variant): still within the rule.
          if (index % 7 == 0) o.anchor_x = 0;
          const std::string what = std::string(spec) + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                                   std::to_string(channels) + " out depth " + std::to_string(out_depth) + " " +
                                   std::string(to_string(border));
          const Variant ran = check_exact(src, f, o, what);
          // auto runs fast (or tensor, its tensor-core row sums) for a centred filter with the same
          // pixel type in and out; other output depths take a dense variant and are still judged
          // against the exact sum.
          if (o.anchor_x < 0 && out_depth == CV_8U) {
            REQUIRE(takes_separable(f, CV_8U, out_depth, 0.0));
            CHECK((ran == Variant::fast || ran == Variant::tensor));
            ++separable_runs;
          }
        }
      }
    }
  }
  CHECK(separable_runs > 90);
}

TEST_CASE("gpu separable: real photos and flat areas at every byte value stay within the rule") {
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo.empty());
  const cv::Mat gray = cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE);
  REQUIRE_FALSE(gray.empty());
  // 16 x 16 flat blocks of each byte value, wide enough for a 15x15 window inside each block.
  cv::Mat flat(16 * 16, 16 * 16, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 16, (v / 16) * 16, 16, 16)).setTo(v);
  for (const char* spec : {"gaussian:3,1.5", "gaussian:7,3", "box:3"}) {
    const Filter f = load_filter(spec);
    REQUIRE(takes_separable(f, CV_8U, CV_8U, 0.0));
    for (const cv::Mat* image : std::initializer_list<const cv::Mat*>{&photo, &gray, &flat}) {
      ConvolveOptions o;
      const Variant ran = check_exact(
          *image, f, o, std::string(spec) + " on " + std::to_string(image->cols) + "x" + std::to_string(image->rows));
      CHECK((ran == Variant::fast || ran == Variant::tensor));
    }
  }
}

TEST_CASE("gpu separable: a delta that puts flat areas on a tie keeps the dense sum of filter2D") {
  // box:3 sums a flat area of value v to v (up to the weights' rounding); --delta 0.5 makes every
  // such sum a tie that a separable float sum could round either way, so auto sums densely, as
  // filter2D does, and meets the pass rule against it.
  const Filter f = load_filter("box:3");
  CHECK(takes_separable(f, CV_8U, CV_8U, 0.0));
  CHECK_FALSE(takes_separable(f, CV_8U, CV_8U, 0.5));
  cv::Mat flat(64, 256, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat.col(v).setTo(v);
  ConvolveOptions o;
  o.delta = 0.5;
  o.border = Border::replicate;
  o.variant = Variant::automatic;
  const cuconv::test::PoisonOutputs poisoned;
  const ConvolveResult got = convolve(flat, f, o);
  ConvolveOptions ref = o;
  ref.variant = Variant::opencv;
  ref.opencv_method = OpenCvMethod::direct_sum;
  const ComparisonStats s = compare_to_reference(got.image, convolve(flat, f, ref).image, flat, f, o, got.variant_used);
  INFO("auto ran ", to_string(got.variant_used), ": max diff ", s.max_abs_difference, ", ", s.differing_values, "/",
       s.total_values, " differ");
  CHECK(s.within_tolerance);
}

TEST_CASE("gpu wide: 16-bit rank-1 filters summed in double meet the pass rule against the exact sum") {
  // Tile edges of the double-precision kernels: the FMA kernel's 256 elements a block and its K - 1
  // rows of warm-up; the FP64-MMA kernel's (one channel) 128 or 64 columns a block (from 25 taps),
  // 8-row tiles and strips of whole tiles; images narrower and shorter than the filter. (14 sizes:
  // prime to the 5 the index steps by, so each channel count meets every size.)
  const std::pair<int, int> sizes[] = {{1, 1},     {7, 5},      {85, 33},   {86, 129}, {255, 31}, {256, 64}, {257, 97},
                                       {600, 130}, {1000, 257}, {2049, 18}, {64, 300}, {333, 1},  {129, 9},  {65, 17}};
  // Every instance (sides 15, 17, ..., 31), an even side (box:16: weights past it zero) and the
  // two presets that reach 15 and 31.
  const char* specs[] = {"gaussian:7,3",  "gaussian:8,3.5", "gaussian:9,3",  "gaussian:10,4",
                         "gaussian:11,4", "gaussian:12,4",  "gaussian:13,5", "gaussian:14,5",
                         "gaussian:15,5", "box:16",         "box:15",        "box:31"};
  // Tiny images would take the tile kernel's double sums (tests/gpu/test_gpu_fast_tile.cpp): off,
  // so these edges reach the double separable kernel.
  const cuconv::test::PathOff no_tiles(gpu::KernelPath::fast_tile);
  const std::uint64_t launches_before = cuconv::test::launches(gpu::KernelPath::fast_double_rank1);
  int index = 0;
  for (const char* spec : specs) {
    const Filter f = load_filter(spec);
    const auto factors = filter::separable_for(f.weights, f.width, f.height, CV_16U, CV_16U, f.offset);
    REQUIRE(factors.has_value());
    REQUIRE(factors->fits_double_rank1);
    for (int channels : {1, 3, 4}) {
      for (Border border : kAllBorders) {
        ++index;
        const auto [cols, rows] = sizes[static_cast<std::size_t>(index * 5 + channels) % std::size(sizes)];
        const cv::Mat src = random_image(rows, cols, CV_16U, channels, 5300 + static_cast<std::uint64_t>(index));
        ConvolveOptions o;
        o.border = border;
        o.border_value = border == Border::constant ? 40000 : 0;
        if (index % 9 == 0) o.delta = -3.25;
        if (index % 4 == 0) o.anchor_x = 0;  // any anchor: the kernel reads rows and columns from it
        if (index % 6 == 0) o.anchor_y = f.height - 1;
        if (channels == 4 && index % 2 == 0) o.keep_alpha = true;
        const std::string what = std::string(spec) + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                                 std::to_string(channels) + " " + std::string(to_string(border)) + " anchor " +
                                 std::to_string(o.anchor_x) + "," + std::to_string(o.anchor_y) +
                                 (o.keep_alpha ? " alpha kept" : "");
        if (!o.keep_alpha) {
          CHECK(check_exact(src, f, o, what, Variant::fast) == Variant::fast);
          continue;
        }
        // A kept alpha channel is copied: colour channels against the exact sum, alpha against the input.
        o.variant = Variant::fast;
        const cuconv::test::PoisonOutputs poisoned;
        const ConvolveResult got = convolve(src, f, o);
        const int ax = o.anchor_x >= 0 ? o.anchor_x : f.resolved_anchor_x();
        const int ay = o.anchor_y >= 0 ? o.anchor_y : f.resolved_anchor_y();
        std::vector<cv::Mat> out;
        std::vector<cv::Mat> in;
        std::vector<cv::Mat> expected;
        cv::split(got.image, out);
        cv::split(src, in);
        cv::split(exact_sum(src, f, ax, ay, o.border, o.border_value, o.delta + f.offset, CV_16U), expected);
        for (int c = 0; c < 3; ++c) {
          const RuleCount r = compare_exact(out[static_cast<std::size_t>(c)], expected[static_cast<std::size_t>(c)]);
          INFO(what << " channel " << c << ": max diff " << r.max_diff << ", " << r.off_by_one << " off by one");
          CHECK(r.max_diff <= 1.0);
          CHECK(static_cast<double>(r.off_by_one) <= 0.001 * static_cast<double>(r.values));
        }
        CHECK(cv::countNonZero(out[3] != in[3]) == 0);
        CHECK(got.variant_used == Variant::fast);
      }
    }
  }
  // Every filter above is rank 1 within the bound: every run launched the double-precision kernel.
  CHECK(cuconv::test::launches(gpu::KernelPath::fast_double_rank1) - launches_before ==
        static_cast<std::uint64_t>(index));
}

TEST_CASE("gpu wide: photos and flat areas at 16 bits, auto by its size rule, and ties left dense") {
  cv::Mat photo8 = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo8.empty());
  cv::Mat photo;
  photo8.convertTo(photo, CV_16U, 257.0);  // the full 16-bit range
  // 40 x 40 flat blocks of 256 values spread over the 16-bit range (wide enough for 31x31 inside).
  cv::Mat flat(16 * 40, 16 * 40, CV_16UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 40, (v / 16) * 40, 40, 40)).setTo(v * 257 + (v % 7));
  // auto (test_variant_choice has the rule's edges): on the RGB photo (786,432 elements) tensor's
  // digit sums for 31x31, fast's double sums for the rest; on one channel (the flat blocks, a
  // 1024^2 channel: the FP64 tensor cores' double sums) and RGB 1024^2 fast for both sizes. Every
  // result judged by the same rule.
  cv::Mat large;
  cv::resize(photo, large, cv::Size(1024, 1024), 0, 0, cv::INTER_LINEAR);
  cv::Mat large_channel;
  cv::extractChannel(large, large_channel, 1);
  struct Case {
    const char* spec;
    const cv::Mat* image;
    Variant by_auto;
  };
  std::vector<Case> cases;
  for (const char* spec : {"gaussian:7,3", "gaussian:11,4", "gaussian:15,5", "box:15"}) {
    const Variant by_auto = std::string(spec) == "gaussian:15,5" ? Variant::tensor : Variant::fast;
    cases.push_back({spec, &photo, by_auto});
    cases.push_back({spec, &flat, Variant::fast});
  }
  for (const char* spec : {"gaussian:7,3", "gaussian:15,5"}) {
    cases.push_back({spec, &large_channel, Variant::fast});
    cases.push_back({spec, &large, Variant::fast});
  }
  for (const Case& c : cases) {
    const Filter f = load_filter(c.spec);
    const std::string what = std::string(c.spec) + " on " + std::to_string(c.image->cols) + "x" +
                             std::to_string(c.image->rows) + "x" + std::to_string(c.image->channels());
    std::uint64_t before = cuconv::test::launches(gpu::KernelPath::fast_double_rank1);
    CHECK(check_exact(*c.image, f, ConvolveOptions{}, what, Variant::fast) == Variant::fast);
    CHECK(cuconv::test::launches(gpu::KernelPath::fast_double_rank1) - before == 1u);
    before = cuconv::test::launches(gpu::KernelPath::fast_double_rank1);
    CHECK(check_exact(*c.image, f, ConvolveOptions{}, what + ", auto") == c.by_auto);
    CHECK(cuconv::test::launches(gpu::KernelPath::fast_double_rank1) - before ==
          (c.by_auto == Variant::fast ? 1u : 0u));
  }
  // Below 15 taps a side fast keeps its float kernels (filter2D's own results): no double sums,
  // asked for or by auto (which takes tensor's digit sums for 13x13 on this photo, test_variant_choice).
  struct Below15 {
    const char* spec;
    Variant asked, ran;
  };
  for (const Below15& b : {Below15{"gauss5", Variant::automatic, Variant::fast},
                           Below15{"gaussian:6,2.5", Variant::automatic, Variant::tensor},
                           Below15{"gaussian:6,2.5", Variant::fast, Variant::fast}}) {
    const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::fast_double_rank1);
    ConvolveOptions o;
    o.variant = b.asked;
    const cuconv::test::PoisonOutputs poisoned;
    const ConvolveResult got = convolve(photo, load_filter(b.spec), o);
    CHECK(got.variant_used == b.ran);
    CHECK(cuconv::test::launches(gpu::KernelPath::fast_double_rank1) == before);
    CHECK(cuconv::test::compare_with_filter2d(got.image, photo, load_filter(b.spec), o, got.variant_used)
              .within_tolerance);
  }
  // A delta that puts every flat area on a tie: no double sums; auto sums densely, as filter2D does
  // (the exact sum of such a tie rounds by the weights' last bits), and stays in the rule against it.
  const Filter box = load_filter("box:3");
  CHECK_FALSE(takes_separable(box, CV_16U, CV_16U, 0.5));
  ConvolveOptions tie;
  tie.delta = 0.5;
  const cuconv::test::PoisonOutputs poisoned;
  const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::fast_double_rank1);
  const ConvolveResult got = convolve(flat, box, tie);
  CHECK(cuconv::test::launches(gpu::KernelPath::fast_double_rank1) == before);
  const ComparisonStats s = cuconv::test::compare_with_filter2d(got.image, flat, box, tie);
  INFO("auto ran ", to_string(got.variant_used), ": max diff ", s.max_abs_difference, ", ", s.differing_values, "/",
       s.total_values, " differ");
  CHECK(s.within_tolerance);
}
