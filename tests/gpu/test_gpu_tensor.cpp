// SPDX-License-Identifier: Apache-2.0
// `tensor`: the separable kernel (rank-1 filters, row sums on tensor cores; kernels/tensor_separable.cuh)
// and the dense kernels (any 8-bit filter up to 17x17; kernels/tensor_dense.cuh, and on sm_90 for
// one channel kernels/tensor_dense_wgmma.cuh, which must give the same bits), judged against
// the exact sum (double precision, rounded half to even, saturated; tests/support/exact_sum.hpp) under the
// integer pass rule over filter sizes, anchors, channel counts, borders, the kernels' tile edges,
// unaligned rows, photos and flat areas at every byte value; filters whose sums are exact, bit for
// bit. Outputs are poisoned on the device before every run, and launch counters show that the
// kernel under test ran.
#include "exact_sum.hpp"
#include "filter/splits.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu_seams.hpp"
#include "skip.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
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

/// Launches of either dense 8-bit kernel (one channel runs the warpgroup one on sm_90).
std::uint64_t dense_launches() {
  return cuconv::test::launches(gpu::KernelPath::tensor_dense) +
         cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma);
}

}  // namespace

TEST_CASE("gpu tensor: tensor-core row sums meet the pass rule against the exact sum") {
  // Tile edges of the tensor kernel: 512 elements a block, 16-row chunks, strips of 32..128 rows;
  // images narrower than the halo, and widths that are no multiple of 4 or 16.
  const std::pair<int, int> sizes[] = {{1, 1},    {7, 5},     {33, 17},  {170, 16},  {171, 31},  {512, 33},
                                       {513, 64}, {1023, 97}, {1025, 3}, {600, 129}, {2049, 18}, {4099, 40}};
  const char* specs[] = {"gaussian:1,0.8", "gaussian:2,1.1", "gaussian:3,1.5", "gaussian:4,1.9",
                         "gaussian:5,2.2", "gaussian:6,2.5", "gaussian:7,3",   "gaussian:8,3.5",
                         "box:5",          "box:9",          "gauss5",         "box:17"};
  const std::uint64_t launches_before = cuconv::test::rank1_tensor_launches();
  int index = 0;
  int tensor_runs = 0;
  for (const char* spec : specs) {
    const Filter f = load_filter(spec);
    const auto factors = filter::separable_for(f.weights, f.width, f.height, CV_8U, CV_8U, f.offset);
    REQUIRE(factors.has_value());
    for (int channels : {1, 3, 4}) {
      for (Border border : kAllBorders) {
        ++index;
        const auto [cols, rows] = sizes[static_cast<std::size_t>(index * 5 + channels) % std::size(sizes)];
        const cv::Mat src = random_image(rows, cols, CV_8U, channels, 7100 + static_cast<std::uint64_t>(index));
        ConvolveOptions o;
        o.border = border;
        o.border_value = border == Border::constant ? 201 : 0;
        if (index % 9 == 0) o.delta = -3.25;
        const std::string what = std::string(spec) + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                                 std::to_string(channels) + " " + std::string(to_string(border));
        CHECK(check_exact(src, f, o, what, Variant::tensor) == Variant::tensor);
        tensor_runs += factors->fits_tensor_split ? 1 : 0;
      }
    }
  }
  // Every filter above splits within the rule, so each run launched the tensor-core kernel.
  CHECK(tensor_runs == index);
  CHECK(cuconv::test::rank1_tensor_launches() - launches_before == static_cast<std::uint64_t>(tensor_runs));
}

TEST_CASE("gpu tensor: photos, flat areas, exact presets and what it leaves to fast") {
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo.empty());
  // 640 x 640: past the size where auto keeps these filters on fast's tile kernel (1600 tiles).
  cv::Mat flat(16 * 40, 16 * 40, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 40, (v / 16) * 40, 40, 40)).setTo(v);
  for (const char* spec : {"gaussian:7,3", "gaussian:8,2", "box:15"}) {
    const Filter f = load_filter(spec);
    for (const cv::Mat* image : std::initializer_list<const cv::Mat*>{&photo, &flat}) {
      ConvolveOptions o;
      CHECK(check_exact(*image, f, o,
                        std::string(spec) + " on " + std::to_string(image->cols) + "x" + std::to_string(image->rows)) ==
            Variant::tensor);
    }
  }
  // Dyadic presets sum exactly on both paths: `tensor` and `fast` agree bit for bit.
  for (const char* spec : {"gauss5", "gauss3", "box:4"}) {
    const Filter f = load_filter(spec);
    ConvolveOptions o;
    const cuconv::test::PoisonOutputs poisoned;
    o.variant = Variant::tensor;
    const std::uint64_t before = cuconv::test::rank1_tensor_launches();
    const cv::Mat tensor = convolve(photo, f, o).image;
    const bool centred_odd = f.width % 2 == 1;
    CHECK(cuconv::test::rank1_tensor_launches() - before == (centred_odd ? 1u : 0u));
    o.variant = Variant::fast;
    const cv::Mat fast = convolve(photo, f, o).image;
    INFO(spec);
    cv::Mat differs = tensor != fast;
    CHECK(cv::countNonZero(differs.reshape(1)) == 0);
  }
  // Off-centre anchors, a kept alpha channel and 16-bit input run fast's kernels, still in the rule.
  const std::uint64_t before = cuconv::test::rank1_tensor_launches();
  const Filter g = load_filter("gaussian:3,1.5");
  ConvolveOptions off;
  off.anchor_x = 1;
  check_exact(photo, g, off, "off-centre anchor", Variant::tensor);
  cv::Mat rgba;
  cv::cvtColor(photo, rgba, cv::COLOR_BGR2BGRA);
  ConvolveOptions alpha;
  alpha.keep_alpha = true;
  alpha.variant = Variant::tensor;
  const ConvolveResult kept = convolve(rgba, g, alpha);
  std::vector<cv::Mat> planes;
  cv::split(kept.image, planes);
  std::vector<cv::Mat> original;
  cv::split(rgba, original);
  CHECK(cv::countNonZero(planes[3] != original[3]) == 0);
  CHECK(cuconv::test::rank1_tensor_launches() == before);
}

TEST_CASE("gpu tensor dense: tensor-core sums of dense filters meet the pass rule against the exact sum") {
  // Tile edges of the dense kernel: 256 pixels a block on one channel, 128 on three and four;
  // 16-row chunks, strips of 32..128 rows; widths with row ends inside a word and images smaller
  // than the filter. Filters: every side class (one k16 step up to 9 wide, k16 + k8 up to 17),
  // rectangles, and anchors at the corners.
  const std::pair<int, int> sizes[] = {{1, 1},    {5, 7},     {31, 17}, {129, 16},  {127, 31},  {256, 33},
                                       {257, 64}, {1023, 97}, {385, 3}, {600, 129}, {2049, 18}, {130, 140}};
  const std::pair<int, int> shapes[] = {{2, 2},   {3, 3},   {5, 5},  {8, 8},  {9, 9},  {10, 10},
                                        {15, 15}, {17, 17}, {17, 3}, {1, 17}, {9, 16}, {16, 4}};
  const std::uint64_t launches_before = dense_launches();
  int index = 0;
  for (const auto& [kw, kh] : shapes) {
    const Filter f = cuconv::test::random_filter(kw, kh, 900 + static_cast<std::uint64_t>(kw * 32 + kh));
    for (int channels : {1, 3, 4}) {
      for (Border border : kAllBorders) {
        ++index;
        const auto [cols, rows] = sizes[static_cast<std::size_t>(index * 7 + channels) % std::size(sizes)];
        const cv::Mat src = random_image(rows, cols, CV_8U, channels, 8100 + static_cast<std::uint64_t>(index));
        ConvolveOptions o;
        o.border = border;
        o.border_value = border == Border::constant ? 77 : 0;
        cuconv::test::cycle_anchor(o, index, kw, kh);
        if (index % 9 == 0) o.delta = 2.7;
        const auto split = filter::dense_tensor_split(f.weights, kw, kh, o.delta);
        REQUIRE(split.has_value());
        REQUIRE(split->holds);
        const std::string what = f.origin + " " + std::to_string(cols) + "x" + std::to_string(rows) + "x" +
                                 std::to_string(channels) + " " + std::string(to_string(border)) + " anchor " +
                                 std::to_string(o.anchor_x) + "," + std::to_string(o.anchor_y);
        CHECK(check_exact(src, f, o, what, Variant::tensor) == Variant::tensor);
      }
    }
  }
  // Every run above launched the dense kernel (none fell back to fast).
  CHECK(dense_launches() - launches_before == static_cast<std::uint64_t>(index));
}

TEST_CASE("gpu tensor dense: photos and flat areas, auto's choice, unaligned rows, and what it leaves to fast") {
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo.empty());
  // 640 x 640: past the size where auto keeps 9x9 filters on fast's tile kernel (1024 tiles).
  cv::Mat flat(16 * 40, 16 * 40, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 40, (v / 16) * 40, 40, 40)).setTo(v);
  cv::Mat rgba;
  cv::cvtColor(photo, rgba, cv::COLOR_BGR2BGRA);
  // auto sends dense 8-bit filters of more than 5x5's taps to the dense kernel.
  const std::uint64_t before = dense_launches();
  int runs = 0;
  for (int k : {7, 9, 13, 17}) {
    const Filter f = cuconv::test::random_filter(k, k, 300 + static_cast<std::uint64_t>(k));
    for (const cv::Mat* image : std::initializer_list<const cv::Mat*>{&photo, &flat, &rgba}) {
      ConvolveOptions o;
      CHECK(check_exact(*image, f, o, f.origin + " on " + std::to_string(image->channels()) + " channels") ==
            Variant::tensor);
      ++runs;
    }
  }
  // A gaussian anchored off its centre (not the separable kernel's case) runs on it too.
  const Filter gaussian = load_filter("gaussian:5,2");
  ConvolveOptions corner;
  corner.anchor_x = 0;
  corner.anchor_y = 0;
  CHECK(check_exact(photo, gaussian, corner, "gaussian:5,2 anchored at (0,0)", Variant::tensor) == Variant::tensor);
  ++runs;
  CHECK(dense_launches() - before == static_cast<std::uint64_t>(runs));

  // Dyadic dense filters (multiples of 2^-n, summing to about 3/4): the integer sums and the
  // power-of-two scaling are exact, so every value, ties included (rounded half to even), equals
  // the exact sum's.
  for (int k : {4, 5, 9, 16}) {
    Filter dyadic;
    dyadic.width = dyadic.height = k;
    const double unit = std::ldexp(1.0, -static_cast<int>(std::ceil(std::log2(4.0 * k * k))));
    cv::RNG rng(static_cast<std::uint64_t>(k));
    for (int i = 0; i < k * k; ++i) dyadic.weights.push_back(rng.uniform(-2, 8) * unit);
    dyadic.origin = "dyadic " + std::to_string(k) + "x" + std::to_string(k);
    ConvolveOptions o;
    o.variant = Variant::tensor;
    const cuconv::test::PoisonOutputs poisoned;
    const std::uint64_t dyadic_before = dense_launches();
    const cv::Mat got = convolve(photo, dyadic, o).image;
    CHECK(dense_launches() - dyadic_before == 1u);
    const cv::Mat expected =
        exact_sum(photo, dyadic, dyadic.resolved_anchor_x(), dyadic.resolved_anchor_y(), o.border, 0, 0, CV_8U);
    const RuleCount r = compare_exact(got, expected);
    INFO(dyadic.origin << ": max diff " << r.max_diff << ", " << r.off_by_one << " off by one");
    CHECK(r.max_diff == 0.0);
  }

  // Rows that start off a 4-byte boundary (every staged byte through the column map) and output
  // rows off 16 bytes (byte stores) give the aligned path's result bit for bit (on sm_90 the
  // aligned one-channel run is the warpgroup kernel's; unaligned rows run tensor_dense.cuh).
  GpuWorkspace workspace;
  for (int channels : {1, 3, 4})
    cuconv::test::check_unaligned_rows(
        random_image(45, 301, CV_8U, channels, 61 + static_cast<std::uint64_t>(channels)),
        cuconv::test::random_filter(11, 7, 62), cuconv::test::launches_of<gpu::KernelPath::tensor_dense>, workspace,
        "dense 11x7");

  // Left to fast: a kept alpha channel, 16-bit input, and a filter whose split misses the rule (a
  // flat area at a tie); sides past 17 go to the planes kernel (tests/gpu/test_gpu_tensor_planes.cpp).
  // Under auto 3x3 stays on fast, and 5x5 on one channel; 5x5 on colour images takes tensor.
  const std::uint64_t none_before = dense_launches();
  const Filter f5 = cuconv::test::random_filter(5, 5, 11);
  ConvolveOptions alpha;
  alpha.keep_alpha = true;
  alpha.variant = Variant::tensor;
  CHECK(convolve(rgba, f5, alpha).variant_used == Variant::tensor);
  cv::Mat wide16;
  photo.convertTo(wide16, CV_16U, 200.0);
  ConvolveOptions o16;
  o16.variant = Variant::tensor;
  CHECK(convolve(wide16, f5, o16).variant_used == Variant::tensor);
  check_exact(photo, cuconv::test::random_filter(19, 19, 12), o16, "19x19 on tensor", Variant::tensor);
  Filter halves;
  halves.width = halves.height = 5;
  halves.weights.assign(25, 0.0);
  halves.weights[12] = 0.5;
  halves.weights[0] = 1e-9;  // lost to the integers: the split is not exact, and flat areas sit at ties
  halves.origin = "0.5 at the centre";
  CHECK_FALSE(filter::dense_tensor_split(halves.weights, 5, 5, 0.0)->holds);
  CHECK(convolve(flat, halves, o16).variant_used == Variant::tensor);
  CHECK(dense_launches() == none_before);
  ConvolveOptions automatic;
  CHECK(convolve(photo, cuconv::test::random_filter(3, 3, 13), automatic).variant_used == Variant::fast);
  CHECK(convolve(flat, f5, automatic).variant_used == Variant::fast);
  CHECK(dense_launches() == none_before);
  // Colour 5x5 takes tensor from the tuning row's colour_5x5_tensor_min_pixels (1024^2 on sm_90).
  cv::Mat large_photo;
  cv::resize(photo, large_photo, cv::Size(1024, 1024), 0, 0, cv::INTER_LINEAR);
  CHECK(check_exact(large_photo, f5, automatic, "auto 5x5 on a colour photo of 1024^2") == Variant::tensor);
  CHECK(dense_launches() == none_before + 1);
}

TEST_CASE("gpu tensor dense wgmma: the warpgroup kernel gives tensor_dense.cuh's bits and meets the pass rule") {
  if (!gpu::device_runs_wgmma()) {
    cuconv::test::skip_case(
        "the warpgroup kernel needs a GPU of compute capability 9.0 (this one runs tensor_dense.cuh)");
    return;
  }
  // Tile edges of the warpgroup kernel: 128 outputs a block (a 144-column window, 160 where
  // anchor_x % 16 != 0 shifts the block), 64-row tiles, one to four a block; images smaller
  // than a tile and than the filter; box copies inside the image, threads' staging at its edges.
  // Anchors with anchor_x % 16 == 0 (8 column blocks) and not (9, odd and even shifts).
  const std::pair<int, int> sizes[] = {{1, 1},     {15, 7},    {16, 64},    {127, 65},  {128, 63},
                                       {129, 128}, {143, 129}, {144, 31},   {145, 200}, {255, 257},
                                       {257, 66},  {400, 300}, {1000, 130}, {2100, 700}};
  const std::pair<int, int> shapes[] = {{1, 1},  {3, 3},  {4, 4},   {5, 5},   {7, 3},  {3, 7},  {9, 9}, {9, 16},
                                        {16, 9}, {13, 5}, {15, 15}, {17, 17}, {17, 1}, {1, 17}, {2, 11}};
  const std::uint64_t wgmma_before = cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma);
  const std::uint64_t dense_before = cuconv::test::launches(gpu::KernelPath::tensor_dense);
  int index = 0;
  for (const auto& [kw, kh] : shapes) {
    const Filter f = cuconv::test::random_filter(kw, kh, 1700 + static_cast<std::uint64_t>(kw * 32 + kh));
    for (Border border : kAllBorders) {
      ++index;
      const auto [cols, rows] = sizes[static_cast<std::size_t>(index * 5) % std::size(sizes)];
      const cv::Mat src = random_image(rows, cols, CV_8U, 1, 9100 + static_cast<std::uint64_t>(index));
      ConvolveOptions o;
      o.border = border;
      o.border_value = border == Border::constant ? 201 : 0;
      const int anchors[] = {kw / 2, 0, kw - 1, std::min(kw - 1, 16), std::min(kw - 1, 1)};
      o.anchor_x = anchors[index % 5];
      o.anchor_y = (index / 5) % 2 == 0 ? kh / 2 : (index % 3 == 0 ? 0 : kh - 1);
      if (index % 7 == 0) o.delta = -2.7;
      const auto split = filter::dense_tensor_split(f.weights, kw, kh, o.delta);
      REQUIRE(split.has_value());
      REQUIRE(split->holds);
      const std::string what = f.origin + " " + std::to_string(cols) + "x" + std::to_string(rows) + " " +
                               std::string(to_string(border)) + " anchor " + std::to_string(o.anchor_x) + "," +
                               std::to_string(o.anchor_y) + " delta " + std::to_string(o.delta);
      INFO(what);
      CHECK(check_exact(src, f, o, what, Variant::tensor) == Variant::tensor);
      // The same run on tensor_dense.cuh: the same integer chains and epilogue, so the same bits.
      const cv::Mat wgmma = cuconv::test::run_poisoned(src, f, o, Variant::tensor).first.image;
      const cv::Mat mma = [&] {
        const cuconv::test::PathOff off(gpu::KernelPath::tensor_dense_wgmma);  // tensor_dense.cuh on sm_90
        return cuconv::test::run_poisoned(src, f, o, Variant::tensor).first.image;
      }();
      CHECK(cuconv::test::bit_equal(wgmma, mma));
    }
  }
  // Two warpgroup runs and one tensor_dense.cuh run a case: nothing fell back.
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma) - wgmma_before ==
        2u * static_cast<std::uint64_t>(index));
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_dense) - dense_before == static_cast<std::uint64_t>(index));

  // auto takes 5x5 on one channel to it from 4096^2 pixels (dense_u8_large_min_pixels in
  // src/gpu/tuning/auto_tuning.hpp), and leaves smaller images to fast.
  const Filter f5 = cuconv::test::random_filter(5, 5, 79);
  const std::uint64_t auto_before = cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma);
  CHECK(convolve(random_image(4096, 4096, CV_8U, 1, 80), f5, ConvolveOptions{}).variant_used == Variant::tensor);
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma) - auto_before == 1u);
  CHECK(convolve(random_image(4096, 4095, CV_8U, 1, 81), f5, ConvolveOptions{}).variant_used == Variant::fast);

  // Three channels stay on tensor_dense.cuh.
  const std::uint64_t colour_before = cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma);
  check_exact(random_image(70, 200, CV_8U, 3, 77), cuconv::test::random_filter(5, 5, 78), ConvolveOptions{}, "RGB 5x5",
              Variant::tensor);
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_dense_wgmma) == colour_before);
}
