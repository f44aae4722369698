// SPDX-License-Identifier: Apache-2.0
// Every GPU variant against cv::filter2D on its direct-summation path (the opencv variant with
// OpenCvMethod::reference (direct_sum, in double for float outputs), checked against filter2D in the CPU suite) under
// the pass rule of include/cuconv/compare.hpp. Outputs are poisoned on the device before every run, so an unwritten
// pixel fails.
//
// CUCONV_TEST_STRIDE=N runs every N-th case of the large sweep (compute-sanitizer runs).
#include "exact_sum.hpp"
#include "gpu/launch/fft_ties.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu_seams.hpp"
#include "skip.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

using namespace cuconv;

// The pass rule's fft tie band (include/cuconv/compare.hpp) is the product's tie margin.
static_assert(kFftRelativeErrorBound == gpu::kFftRelativeError);
static_assert(kFftMaxRepairedMargin == gpu::kFftMaxTieMargin);
using cuconv::test::kAllBorders;
using cuconv::test::random_filter;
using cuconv::test::random_image;
using cuconv::test::sample;
using cuconv::test::sweep_stride;
using cuconv::test::tested_gpu_variants;
using cuconv::test::variant_tested;

namespace {

struct DepthPair {
  int in;
  Depth out;
};
constexpr DepthPair kDepthPairs[] = {{CV_8U, Depth::u8},  {CV_8U, Depth::u16},  {CV_8U, Depth::s16},
                                     {CV_8U, Depth::f32}, {CV_16U, Depth::u16}, {CV_16U, Depth::f32},
                                     {CV_32F, Depth::f32}};
/// Image sizes (cols, rows) on and around the tile edges of every variant: 1, tile-1, tile,
/// tile+1 for 8, 16, 30 and 32, primes, and sizes whose pitch differs from the width.
constexpr std::pair<int, int> kSizes[] = {{1, 1},    {31, 7},  {32, 8},  {33, 9},  {1, 17},  {17, 1},
                                          {29, 15},  {64, 16}, {30, 30}, {61, 47}, {97, 33}, {127, 129},
                                          {257, 31}, {2, 3},   {45, 64}, {96, 17}};
struct FilterShape {
  int kw, kh;
};
constexpr FilterShape kShapes[] = {{1, 1}, {2, 2}, {3, 3}, {5, 5}, {1, 7}, {7, 1}, {15, 15}, {31, 31}};

/// Runs `variant` and the reference on `src`; checks the pass rule.
void check_variant(Variant variant, const cv::Mat& src, const Filter& f, ConvolveOptions o, const std::string& what) {
  o.variant = variant;
  const cuconv::test::PoisonOutputs poisoned;
  const ConvolveResult got = convolve(src, f, o);
  REQUIRE(got.variant_used == variant);
  if (got.image.depth() != CV_32F && got.strips == 1 && gpu::max_strip_rows() == 0 && o.gpu_memory_limit == 0) {
    INFO(what, ": the same run on an output filled with the second poison");
    CHECK(
        cuconv::test::bit_equal(cuconv::test::convolve_second_poison(src, f, o, variant, got.image.type()), got.image));
  }
  const ComparisonStats s = cuconv::test::compare_with_filter2d(got.image, src, f, o, variant);
  INFO(what, ": max diff ", s.max_abs_difference, ", ", s.differing_values, "/", s.total_values, " differ, rel ",
       s.relative_error);
  CHECK(s.within_tolerance);
}

}  // namespace

TEST_CASE("gpu sweep: variant x filter size x border x depth, random data and sizes on tile edges") {
  const int stride = sweep_stride();
  int case_index = 0;
  for (Variant variant : tested_gpu_variants()) {
    for (const FilterShape& shape : kShapes) {
      for (Border border : kAllBorders) {
        for (const DepthPair& depths : kDepthPairs) {
          const int index = case_index++;
          if (index % stride != 0) continue;
          const auto [cols, rows] = kSizes[static_cast<std::size_t>(index) % std::size(kSizes)];
          const int channels = std::array{1, 3, 4}[static_cast<std::size_t>(index / 7) % 3];
          const cv::Mat src = random_image(rows, cols, depths.in, channels, 1000 + static_cast<std::uint64_t>(index));
          Filter f = random_filter(shape.kw, shape.kh, 77 + static_cast<std::uint64_t>(index));
          ConvolveOptions o;
          o.border = border;
          o.depth = depths.out;
          o.border_value = border == Border::constant ? (depths.in == CV_8U ? 200 : 12345.5) : 0.0;
          if (index % 3 == 1) o.delta = depths.in == CV_32F ? -2.5 : 3.0;
          if (index % 4 == 2) {  // an off-centre anchor
            f.anchor_x = shape.kw - 1;
            f.anchor_y = 0;
          }
          check_variant(variant, src, f, o,
                        std::string(to_string(variant)) + " " + std::to_string(shape.kw) + "x" +
                            std::to_string(shape.kh) + " " + std::string(to_string(border)) + " " +
                            std::to_string(cols) + "x" + std::to_string(rows) + "x" + std::to_string(channels) +
                            " depth " + std::to_string(depths.in) + "->" + std::string(to_string(depths.out)));
        }
      }
    }
  }
}

TEST_CASE("gpu: every variant at every tile-edge size, 3x3 and 31x31, 8U and 32F") {
  const int stride = sweep_stride();
  int index = 0;
  for (Variant variant : tested_gpu_variants()) {
    for (const auto& [cols, rows] : kSizes) {
      for (int k : {3, 31}) {
        for (int depth : {CV_8U, CV_32F}) {
          if (index++ % stride != 0) continue;
          const cv::Mat src = random_image(rows, cols, depth, 1, static_cast<std::uint64_t>(index));
          check_variant(variant, src, random_filter(k, k, static_cast<std::uint64_t>(index)), ConvolveOptions{},
                        std::string(to_string(variant)) + " " + std::to_string(k) + " at " + std::to_string(cols) +
                            "x" + std::to_string(rows));
        }
      }
    }
  }
}

TEST_CASE("gpu: presets on real images exercise half-way rounding (8U, 16U, float)") {
  const char* images[] = {"camera.png", "coffee.png", "logo.png", "chessboard_GRAY_U16.tif", "camera_f32.tif"};
  const int stride = sweep_stride();  // under a sanitizer: every stride-th image and preset pair
  int index = 0;
  for (Variant variant : tested_gpu_variants()) {
    for (const char* name : images) {
      const cv::Mat src = cv::imread(sample(name), cv::IMREAD_UNCHANGED);
      REQUIRE(!src.empty());
      for (const char* spec : {"gauss3", "gauss5", "sobel-x", "box:31", "gaussian:15,6"}) {
        if (index++ % stride != 0) continue;
        ConvolveOptions o;
        o.delta = std::string(spec) == "sobel-x" ? 128 : 0;
        check_variant(variant, src, load_filter(spec), o, std::string(to_string(variant)) + " " + name + " " + spec);
      }
    }
  }
}

TEST_CASE("gpu: integer outputs round half to even and saturate bit for bit as cv::filter2D") {
  // A centre-only 3x3 filter makes every sum exact, so the result must equal cv::filter2D's bit
  // for bit: ties (w = 0.5 on odd values, delta 0.5), both ends of each output type, and sums
  // beyond int's range (cv::saturate_cast takes cvRound's INT_MIN there: the lowest value).
  // -16000 keeps every sum above -2^22 (fast's clamp-free 8-bit rounding); -60000 reaches below
  // -1.5 * 2^23, where that rounding without its clamp would wrap to 255, and 60000 as far above.
  cv::Mat u8(19, 23, CV_8U);
  cv::Mat u16(19, 23, CV_16U);
  for (int y = 0; y < u8.rows; ++y)
    for (int x = 0; x < u8.cols; ++x) {
      const int i = y * u8.cols + x;
      u8.at<uchar>(y, x) = static_cast<uchar>(i * 7 % 256);  // every byte value
      u16.at<ushort>(y, x) = static_cast<ushort>(i % 5 == 0 ? 65535 : (i * 7919) % 65536);
    }
  struct Case {
    const cv::Mat* src;
    Depth out;
    int cv_depth;
  };
  const Case cases[] = {
      {&u8, Depth::u8, CV_8U}, {&u8, Depth::u16, CV_16U}, {&u8, Depth::s16, CV_16S}, {&u16, Depth::u16, CV_16U}};
  for (Variant variant : tested_gpu_variants()) {
    for (const Case& c : cases) {
      for (const float w : {0.5f, 1.0f, -1.0f, 2.0f, -200.0f, 300.0f, -16000.0f, -60000.0f, 60000.0f, 1e30f, -1e30f}) {
        // fft's transform sums are not exact; it sums results near a tie again only for 8-bit
        // outputs of small weights (src/gpu/launch/fft_ties.hpp), and those must then be exact too.
        if (variant == Variant::fft && !(c.out == Depth::u8 && std::fabs(w) <= 2.0f)) continue;
        for (const double delta : {0.0, 0.5, -0.5}) {
          Filter f;
          f.width = 3;
          f.height = 3;
          f.weights.assign(9, 0.0);
          f.weights[4] = w;
          f.anchor_x = 1;
          f.anchor_y = 1;
          f.origin = "centre-only 3x3";
          ConvolveOptions o;
          o.variant = variant;
          o.depth = c.out;
          o.delta = delta;
          const cuconv::test::PoisonOutputs poisoned;
          const ConvolveResult got = convolve(*c.src, f, o);
          cv::Mat expected;
          const cv::Mat kernel = (cv::Mat_<float>(3, 3) << 0, 0, 0, 0, w, 0, 0, 0, 0);
          cv::filter2D(*c.src, expected, c.cv_depth, kernel, cv::Point(1, 1), delta, cv::BORDER_REFLECT_101);
          INFO(to_string(variant), " depth ", to_string(c.out), " from ", c.src->depth(), " w ", w, " delta ", delta);
          REQUIRE(got.variant_used == variant);
          CHECK(cuconv::test::bit_equal(got.image, expected));
        }
      }
    }
  }
}

TEST_CASE("gpu: fft on 8-bit outputs sums ties again: dyadic dense 31x31 filters equal basic bit for bit") {
  // Weights of 0, 1/256 and -1/512 on 8-bit pixels: every product and partial sum is exact in
  // float, so the direct variants give the exact sum, rounded half to even; about 1 in 512 of the
  // sums is a tie n + 1/2, which fft's transform error tips either way unless it sums them again.
  if (!variant_tested(Variant::fft)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fft");
    return;
  }
  constexpr std::pair<int, int> kFftSizes[] = {{37, 5}, {481, 61}, {482, 483}, {483, 100}, {997, 13}};
  const int stride = sweep_stride();
  int index = 0;
  for (const auto& size : kFftSizes) {
    const int cols = size.first;  // not a structured binding: INFO's lambda below names it
    const int rows = size.second;
    for (int channels : {1, 3, 4}) {
      for (const double delta : {0.0, 0.5}) {
        if (index++ % stride != 0) continue;
        const Border border = kAllBorders[static_cast<std::size_t>(index) % std::size(kAllBorders)];
        cv::RNG rng(900 + static_cast<std::uint64_t>(index));
        Filter f;
        f.width = f.height = 31;
        f.origin = "dyadic 31x31";
        f.weights.resize(std::size_t{31} * 31);
        for (double& w : f.weights) {
          const double pick = rng.uniform(0.0, 1.0);
          w = pick < 0.6 ? 0.0 : pick < 0.9 ? 1.0 / 256 : -1.0 / 512;
        }
        const cv::Mat src = random_image(rows, cols, CV_8U, channels, 300 + static_cast<std::uint64_t>(index));
        ConvolveOptions o;
        o.border = border;
        o.border_value = 77;
        o.delta = delta;
        const cuconv::test::PoisonOutputs poisoned;
        o.variant = Variant::basic;
        const cv::Mat direct = convolve(src, f, o).image;
        o.variant = Variant::fft;
        const ConvolveResult got = convolve(src, f, o);
        REQUIRE(got.variant_used == Variant::fft);
        // The exact sums (double, exact here) hold enough ties for the check to mean something.
        ConvolveOptions exact_options = o;
        exact_options.variant = Variant::opencv;
        exact_options.opencv_method = OpenCvMethod::reference;
        exact_options.depth = Depth::f32;
        const cv::Mat exact = convolve(src, f, exact_options).image;
        int ties = 0;
        for (auto it = exact.begin<float>(); it != exact.end<float>(); ++it)
          ties += *it >= 0.0f && *it <= 255.0f && *it - std::floor(*it) == 0.5f ? 1 : 0;
        INFO("fft ", cols, "x", rows, "x", channels, " ", to_string(border), " delta ", delta, ": ", ties, " ties");
        // Sums are multiples of 1/512 (1 in 512 a tie) where not saturated; an H100 run counted
        // 436 ties in 482 x 483 x 4 values (1 in 2136).
        CHECK(ties >= static_cast<int>(exact.total() * exact.channels() / 8192));
        CHECK(cuconv::test::bit_equal(got.image, direct));
      }
    }
  }
}

TEST_CASE("gpu: fft with more ties than its repair list holds sums the rest in place, bit for bit") {
  // A centre-only filter of weight 0.5 on every byte value: half of the outputs are exact ties,
  // far more than the list fft_scatter_tiles hands to fft_repair_ties holds, so most of them take
  // the scatter's own fallback. Both paths must round half to even as cv::filter2D's direct sum.
  if (!variant_tested(Variant::fft)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fft");
    return;
  }
  struct Shape {
    int cols, rows, channels, k;
  };
  for (const Shape& shape : {Shape{300, 257, 1, 3}, Shape{151, 97, 3, 3}, Shape{509, 31, 4, 31}}) {
    cv::Mat src(shape.rows, shape.cols, CV_8UC(shape.channels));
    for (int y = 0; y < src.rows; ++y) {
      auto* row = src.ptr<uchar>(y);
      for (int i = 0; i < src.cols * shape.channels; ++i) row[i] = static_cast<uchar>((y * 131 + i * 7) % 256);
    }
    Filter f;
    f.width = f.height = shape.k;
    f.weights.assign(static_cast<std::size_t>(shape.k) * shape.k, 0.0);
    f.weights[f.weights.size() / 2] = 0.5;
    f.anchor_x = f.anchor_y = shape.k / 2;
    f.origin = "centre-only";
    for (const double delta : {0.0, 0.5}) {
      ConvolveOptions o;
      o.variant = Variant::fft;
      o.delta = delta;
      const cuconv::test::PoisonOutputs poisoned;
      const ConvolveResult got = convolve(src, f, o);
      // filter2D's direct path: for 31x31 filter2D itself takes a DFT whose error flips about
      // 15% of these ties (src/convolve/cpu_reference.cpp), so it is no reference for rounding.
      ConvolveOptions reference_options = o;
      reference_options.variant = Variant::opencv;
      reference_options.opencv_method = OpenCvMethod::direct_sum;
      const cv::Mat expected = convolve(src, f, reference_options).image;
      // The lists of all passes together, however the tiles are batched: one list per pass, sized
      // to its batch of whole tiles; at most `tiles` passes of equal batches, which together hold
      // fewer than 2 x tiles tiles (launch_fft.cu; fft_repair_capacity is linear plus a constant).
      const long long tile_w = cuconv::gpu::fft_tile_side(shape.k, shape.cols) - shape.k + 1;
      const long long tile_h = cuconv::gpu::fft_tile_side(shape.k, shape.rows) - shape.k + 1;
      const long long tiles =
          ((shape.cols + tile_w - 1) / tile_w) * ((shape.rows + tile_h - 1) / tile_h) * shape.channels;
      const long long capacity = cuconv::gpu::fft_repair_capacity(tile_w * tile_h * (2 * tiles - 1)) +
                                 (tiles - 1) * cuconv::gpu::fft_repair_capacity(0);
      long long ties = 0;  // odd values give n + 1/2 at delta 0, even ones at delta 0.5
      for (int y = 0; y < src.rows; ++y)
        for (int i = 0; i < src.cols * shape.channels; ++i) ties += (src.ptr<uchar>(y)[i] % 2 == 1) == (delta == 0.0);
      INFO(shape.cols, "x", shape.rows, "x", shape.channels, " k ", shape.k, " delta ", delta, ": ", ties,
           " ties, lists of ", capacity, " in all");
      REQUIRE(got.variant_used == Variant::fft);
      CHECK(ties > capacity);
      CHECK(cuconv::test::bit_equal(got.image, expected));
    }
  }
}

TEST_CASE("gpu: fft transforms a filter once and a changed filter again, never a stale spectrum") {
  if (!variant_tested(Variant::fft)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fft");
    return;
  }
  const cv::Mat src = random_image(97, 131, CV_8U, 3, 4242);
  Filter f = random_filter(17, 17, 4243);
  ConvolveOptions o;
  o.variant = Variant::fft;
  const cuconv::test::PoisonOutputs poisoned;
  const auto built = [] { return cuconv::test::launches(cuconv::gpu::KernelPath::fft_filter_spectrum); };
  const auto before = built();
  const ConvolveResult first = convolve(src, f, o);
  REQUIRE(first.variant_used == Variant::fft);
  CHECK(built() == before + 1);
  check_variant(Variant::fft, src, f, o, "fft, first run");

  // The same filter and tile size: the kept spectrum, the same bytes.
  const auto after_first = built();
  const ConvolveResult again = convolve(src, f, o);
  CHECK(built() == after_first);
  CHECK(cuconv::test::bit_equal(again.image, first.image));

  // One weight changed: a new spectrum, and the results of the new filter.
  Filter changed = f;
  changed.weights[changed.weights.size() / 2] += 0.25;
  CHECK(built() == after_first);
  const ConvolveResult other = convolve(src, changed, o);
  CHECK(built() == after_first + 1);
  CHECK_FALSE(cuconv::test::bit_equal(other.image, first.image));
  check_variant(Variant::fft, src, changed, o, "fft, changed filter");

  // Another image size with another tile size: a new spectrum too.
  const cv::Mat large = random_image(700, 650, CV_8U, 1, 4244);
  REQUIRE(cuconv::gpu::fft_tile_side(17, 650) != cuconv::gpu::fft_tile_side(17, 131));
  check_variant(Variant::fft, large, f, o, "fft, larger tiles");
  CHECK(built() == after_first + 2);
  // And the first filter on the first size again: still kept (the cache holds a few).
  const ConvolveResult back = convolve(src, f, o);
  CHECK(built() == after_first + 2);
  CHECK(cuconv::test::bit_equal(back.image, first.image));
}

TEST_CASE("gpu: very tall and very wide images need no special grid (gridDim.y <= 65535)") {
  const std::pair<int, int> shapes[] = {{1, 100000}, {100000, 1}, {70000, 70}, {70, 70000}, {1, 2100000}};
  const int stride = sweep_stride();
  int index = 0;
  for (Variant variant : tested_gpu_variants()) {
    for (const auto& [cols, rows] : shapes) {
      if (index++ % stride != 0) continue;
      const cv::Mat src =
          random_image(rows, cols, CV_8U, 1, static_cast<std::uint64_t>(rows) + static_cast<std::uint64_t>(cols));
      ConvolveOptions o;
      o.border = Border::wrap;
      check_variant(variant, src, load_filter("5x3:1,2,3,2,1,2,4,6,4,2,1,2,3,2,1"), o,
                    std::string(to_string(variant)) + " " + std::to_string(cols) + "x" + std::to_string(rows));
    }
  }
}

TEST_CASE("gpu: a non-continuous input (ROI with an odd row step) and the largest filter") {
  const cv::Mat big = random_image(101, 203, CV_8U, 3, 5);
  const cv::Mat roi = big(cv::Rect(3, 5, 97, 61));
  REQUIRE_FALSE(roi.isContinuous());
  // Under a sanitizer (stride > 1) the 127x127 case shrinks its image: racecheck tracks every
  // one of the 16129 shared-memory reads per pixel.
  const int side = sweep_stride() > 1 ? 24 : 150;
  for (Variant variant : tested_gpu_variants()) {
    check_variant(variant, roi, load_filter("gauss7"), ConvolveOptions{}, std::string(to_string(variant)) + " roi");
    const cv::Mat src = random_image(side, side - 10, CV_32F, 1, 6);
    check_variant(variant, src, random_filter(kMaxFilterSide, kMaxFilterSide, 8), ConvolveOptions{},
                  std::string(to_string(variant)) + " 127x127");
  }
}

TEST_CASE("gpu: --alpha keep leaves alpha untouched on every variant") {
  const cv::Mat logo = cv::imread(sample("logo.png"), cv::IMREAD_UNCHANGED);
  cv::Mat alpha;
  cv::extractChannel(logo, alpha, 3);
  for (Variant variant : tested_gpu_variants()) {
    ConvolveOptions o;
    o.variant = variant;
    o.keep_alpha = true;
    cv::Mat out_alpha;
    cv::extractChannel(convolve(logo, load_filter("box5"), o).image, out_alpha, 3);
    CHECK(cv::norm(alpha, out_alpha, cv::NORM_INF) == 0);
    check_variant(variant, logo, load_filter("box5"), o, std::string(to_string(variant)) + " alpha keep");
  }
}

TEST_CASE("gpu: fast on its own tile edges, interleaved channels, dense and separable radii of its lists") {
  if (!variant_tested(Variant::fast)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fast");
    return;
  }
  // fast_kernel's own paths: its tile kernel off (test_gpu_fast_tile.cpp tests that one).
  const cuconv::test::PathOff tiles_off(gpu::KernelPath::fast_tile);
  // fast's block is 4 warps of 32 threads x kVec elements (kVec = 4..16 by type and radius) by a
  // strip of 2..128 rows; on small filters lanes pass the halo by shuffle and lanes 0 and 31 read
  // the warp's edges. An interleaved row has width * channels elements, so widths cross warp
  // (32 kVec) and block (128 kVec) edges in elements for 1, 3 and 4 channels: 512 x 4 = 2048 is a
  // u8 3x3 block, 683 x 3 one element more, 2047 one less.
  const std::pair<int, int> sizes[] = {{1, 1},     {5, 31},    {43, 32},  {128, 33}, {129, 129},
                                       {171, 127}, {172, 257}, {255, 65}, {257, 3},  {513, 255},
                                       {86, 256},  {1031, 7},  {512, 9},  {683, 5},  {2047, 3}};
  // Dense random filters for every unrolled radius; rank-1 filters for the separable radii (which
  // of them take the separable path is separable_for's decision, tested in the CPU suite: float
  // outputs always, 8U only for exact short dyadic factors such as sobel-x and gauss5).
  std::vector<std::string> filters;
  for (int r = 1; r <= 7; ++r) filters.push_back("random " + std::to_string(r));
  for (int r : {1, 2, 4, 7, 8, 11, 15})
    filters.push_back("gaussian:" + std::to_string(r) + "," + std::to_string(0.6 * r + 0.3));
  for (const char* spec : {"sobel-x", "gauss5", "gauss7", "box:9"}) filters.emplace_back(spec);
  const int stride = sweep_stride();
  int index = 0;
  for (const std::string& spec : filters) {
    for (int depth : {CV_8U, CV_16U, CV_32F}) {
      for (int channels : {1, 3, 4}) {
        for (Border border : kAllBorders) {
          if (index++ % stride != 0) continue;
          const auto [cols, rows] = sizes[static_cast<std::size_t>(index) % std::size(sizes)];
          const cv::Mat src = random_image(rows, cols, depth, channels, 500 + static_cast<std::uint64_t>(index));
          const int r = spec.rfind("random", 0) == 0 ? std::stoi(spec.substr(7)) : 0;
          const Filter f =
              r > 0 ? random_filter(2 * r + 1, 2 * r + 1, static_cast<std::uint64_t>(index)) : load_filter(spec);
          const ConvolveOptions o = cuconv::test::sweep_case_options(border, depth, channels, index);
          check_variant(Variant::fast, src, f, o,
                        "fast " + spec + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                            std::to_string(channels) + " depth " + std::to_string(depth) + " " +
                            std::string(to_string(border)));
        }
      }
    }
  }
}

TEST_CASE("gpu: fast rows that end inside a chunk or on its edge, inside a warp's span (photo widths)") {
  if (!variant_tested(Variant::fast)) {
    cuconv::test::skip_case("CUCONV_TEST_VARIANTS leaves out fast");
    return;
  }
  const cuconv::test::PathOff tiles_off(gpu::KernelPath::fast_tile);  // fast_kernel's rows, not tiles
  // On 3x3 and 5x5 (lanes pass the halo by shuffle) a row of width * channels elements that ends
  // inside a warp's span leaves a lane whose chunk starts at the row end (it reads only the halo
  // its left neighbour's taps take) and, unless the row ends on a chunk's edge, one whose chunk
  // crosses the end (elements inside read where they are, the kHalo after it through the border
  // rule); both at positions found once. The first four widths end on the edge for every kVec
  // (16 u8 at 3x3, 8 at u8 5x5 and u16, 4 f32): 6000 x 3 = 18000 elements is a camera frame's
  // row, 176, 88 and 132 are 11, 11 and 33 chunks; 3000 (9000 elements in RGB), 6001 and 1003
  // cross one.
  int index = 0;
  for (int cols : {6000, 176, 88, 132, 3000, 6001, 1003}) {
    for (int channels : {1, 3}) {
      for (int depth : {CV_8U, CV_16U, CV_32F}) {
        for (int r : {1, 2}) {
          for (Border border : kAllBorders) {
            ++index;
            const cv::Mat src =
                random_image(5 + index % 4, cols, depth, channels, 9100 + static_cast<std::uint64_t>(index));
            const Filter f = random_filter(2 * r + 1, 2 * r + 1, static_cast<std::uint64_t>(index));
            const ConvolveOptions o = cuconv::test::sweep_case_options(border, depth, channels, index);
            check_variant(Variant::fast, src, f, o,
                          "fast " + std::to_string(2 * r + 1) + "x" + std::to_string(2 * r + 1) + " " +
                              std::to_string(cols) + " x" + std::to_string(channels) + " depth " +
                              std::to_string(depth) + " " + std::string(to_string(border)));
          }
        }
      }
    }
  }
}
