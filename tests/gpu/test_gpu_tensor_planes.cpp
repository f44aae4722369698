// SPDX-License-Identifier: Apache-2.0
// `tensor` on float and 16-bit images, and on 8-bit ones past 17x17: the dense kernel on byte MMAs
// over digit planes (kernels/tensor_dense_planes.cuh), judged against the exact double sum under
// the 32F and the integer pass rules over filter sizes (every chunk count and both ring depths),
// anchors, channel counts, borders, the kernel's tile edges; float value ranges from 1e-30 to 1e30
// and mixed magnitudes, windows holding a NaN or an infinity (summed directly by their block);
// integer full range, saturation both ways, exact ties; unaligned rows; filters the splits refuse.
// Outputs are poisoned on the device before every run, and launch counters show which kernel ran.
#include "exact_sum.hpp"
#include "filter/splits.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

using namespace cuconv;
using cuconv::test::check_float_rule;
using cuconv::test::kAllBorders;
using cuconv::test::random_image;

namespace {

/// Random floats of the given kind: 0 uniform in [-100, 100], 1 in [0, 1e-30], 2 in [-1e30, 1e30],
/// 3 magnitudes spread over 2^-40 .. 2^40 with random signs.
cv::Mat float_image(int rows, int cols, int channels, int kind, std::uint64_t seed) {
  cv::Mat m = random_image(rows, cols, CV_32F, channels, seed);
  cv::RNG rng(seed + 1);
  for (auto it = m.begin<float>(); it != m.end<float>(); ++it) {
    switch (kind) {
      case 1:
        *it = static_cast<float>(std::abs(*it) * 1e-32);
        break;
      case 2:
        *it = static_cast<float>(*it * 1e28);
        break;
      case 3:
        *it = std::ldexp(*it / 100.0f, rng.uniform(-40, 41));
        break;
      default:
        break;
    }
  }
  return m;
}

std::string describe(const Filter& f, const cv::Mat& src, Border border, const ConvolveOptions& o, int kind) {
  return f.origin + " " + std::to_string(src.cols) + "x" + std::to_string(src.rows) + "x" +
         std::to_string(src.channels()) + " " + std::string(to_string(border)) + " anchor " +
         std::to_string(o.anchor_x) + "," + std::to_string(o.anchor_y) + " values " + std::to_string(kind);
}

}  // namespace

// Tile edges: 128 pixels a block, 16-row chunks, strips of 32..128 rows; images smaller than the
// filter. Shapes: every chunk count (kw up to 9, 17, 25, 31; 26..31 in column-major K, whose slot
// size follows kh % 8), both rings (kh up to 17, past it), rectangles, single rows and columns.
constexpr std::pair<int, int> kSweepSizes[] = {{1, 1},    {5, 7},    {31, 17}, {127, 16},  {128, 33}, {129, 31},
                                               {257, 64}, {300, 97}, {385, 3}, {200, 129}, {130, 140}};
constexpr std::pair<int, int> kSweepShapes[] = {{3, 3},   {5, 5},   {9, 9},   {10, 10}, {15, 15}, {17, 17},
                                                {18, 18}, {25, 25}, {31, 31}, {31, 1},  {1, 31},  {7, 20},
                                                {26, 9},  {2, 2},   {27, 18}, {30, 13}, {28, 12}};

namespace {

/// Dyadic weights (integers in [-20, 60) over `denominator`) with delta 1/2 on their grid: the
/// split is exact, so on every border each result equals the exact sum rounded half to even, ties
/// included, from one launch of the kernel `launches` counts. The image is halved where the
/// weights sum past 1, to keep most results below saturation.
void check_dyadic_ties(int kw, int kh, double denominator, std::uint64_t seed, int depth, double border_value,
                       std::uint64_t (*launches)() noexcept) {
  Filter dyadic;
  dyadic.width = kw;
  dyadic.height = kh;
  dyadic.origin = "dyadic " + std::to_string(kw) + "x" + std::to_string(kh);
  cv::RNG rng(seed);
  int total = 0;
  for (int k = 0; k < kw * kh; ++k) total += static_cast<int>(dyadic.weights.emplace_back(rng.uniform(-20, 60)));
  for (double& w : dyadic.weights) w /= denominator;
  INFO("weights sum " << total << " / " << denominator);
  const auto split = filter::dense_tensor_for(dyadic.weights, kw, kh, depth, depth, 0.5);
  REQUIRE(split.has_value());
  CHECK(split->bound == 0.0);
  const cv::Mat src = random_image(90, 333, depth, 3, seed + 1) / (total > denominator ? 2 : 1);
  for (Border border : kAllBorders) {
    ConvolveOptions o;
    o.border = border;
    o.border_value = border_value;
    o.delta = 0.5;
    o.variant = Variant::tensor;
    const cuconv::test::PoisonOutputs poisoned;
    const std::uint64_t before = launches();
    const ConvolveResult got = convolve(src, dyadic, o);
    CHECK(got.variant_used == Variant::tensor);
    CHECK(launches() == before + 1);
    const cv::Mat expected = cuconv::test::exact_sum(src, dyadic, kw / 2, kh / 2, border, border_value, 0.5, depth);
    const auto r = cuconv::test::compare_exact(got.image, expected);
    INFO(to_string(border) << ": max diff " << r.max_diff << ", " << r.off_by_one << " off");
    CHECK(r.max_diff == 0.0);
  }
}

/// Every pixel at the depth's largest value under a 31x31 box whose centre weight is doubled (rank
/// 2, so no separable path takes it; its sum passes 1), and random pixels under `filter` times 3
/// (saturating at the top) and times -3 (at 0), each against the exact sum, in three launches of
/// the kernel `launches` counts.
void check_saturation(int depth, Filter filter, std::uint64_t image_seed, std::uint64_t (*launches)() noexcept) {
  const std::uint64_t before = launches();
  const cv::Mat white(70, 140, CV_MAKETYPE(depth, 1), cv::Scalar(depth == CV_8U ? 255 : 65535));
  ConvolveOptions o;
  Filter near_box = load_filter("box:31");
  near_box.weights[31 * 15 + 15] *= 2.0;
  CHECK(cuconv::test::check_exact(white, near_box, o, "white 31x31 box, centre doubled", Variant::tensor) ==
        Variant::tensor);
  for (double& w : filter.weights) w *= 3.0;
  const cv::Mat src = random_image(60, 150, depth, 1, image_seed);
  CHECK(cuconv::test::check_exact(src, filter, o, "gain 3", Variant::tensor) == Variant::tensor);
  for (double& w : filter.weights) w = -w;
  CHECK(cuconv::test::check_exact(src, filter, o, "gain -3", Variant::tensor) == Variant::tensor);
  CHECK(launches() == before + 3);
}

/// A 31x31 spike of 1 among 960 weights of 1e-3: their rounding passes every split's limit.
Filter spike_filter() {
  Filter spike;
  spike.width = spike.height = 31;
  spike.weights.assign(std::size_t{31} * 31, 1e-3);
  spike.weights[480] = 1.0;
  spike.origin = "spike in 1e-3";
  return spike;
}

/// One run of `check` for every sweep shape (with a side past `past_side`) x channel count x
/// border: the filter (random, normalised, seed from `filter_seed` and the shape, its split
/// required to hold), the image size for this run, options with the border, a cycled anchor and
/// now and then a delta, and the run's index. Returns the number of runs.
template <class Split, class Check>
int sweep(std::uint64_t filter_seed, Split&& split, Check&& check, int past_side = 0) {
  int index = 0;
  for (const auto& [kw, kh] : kSweepShapes) {
    if (std::max(kw, kh) <= past_side) continue;
    const Filter f = cuconv::test::random_filter(kw, kh, filter_seed + static_cast<std::uint64_t>(kw * 32 + kh));
    const auto s = split(f);
    REQUIRE(s.has_value());
    REQUIRE(s->holds);
    for (int channels : {1, 3, 4}) {
      for (Border border : kAllBorders) {
        ++index;
        const auto [cols, rows] = kSweepSizes[static_cast<std::size_t>(index * 7 + channels) % std::size(kSweepSizes)];
        ConvolveOptions o;
        o.border = border;
        cuconv::test::cycle_anchor(o, index, kw, kh);
        if (index % 9 == 0) o.delta = 2.7;
        check(f, cv::Size(cols, rows), channels, o, index);
      }
    }
  }
  return index;
}

}  // namespace

TEST_CASE("gpu tensor dense float: block floating point sums meet the 32F rule against the exact sum") {
  const std::uint64_t launches_before = cuconv::test::launches(gpu::KernelPath::tensor_planes_f32);
  const int runs = sweep(
      1900, [](const Filter& f) { return filter::dense_tensor_split_float(f.weights, f.width, f.height); },
      [](const Filter& f, cv::Size size, int channels, ConvolveOptions o, int index) {
        const int kind = index % 4;
        const cv::Mat src =
            float_image(size.height, size.width, channels, kind, 9100 + static_cast<std::uint64_t>(index));
        o.border_value = o.border == Border::constant ? (kind == 1 ? 3e-31 : -41.5) : 0;
        CHECK(check_float_rule(src, f, o, describe(f, src, o.border, o, kind), Variant::tensor) == Variant::tensor);
      });
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_f32) - launches_before ==
        static_cast<std::uint64_t>(runs));
}

TEST_CASE("gpu tensor dense float: NaN and infinity, blocks of different scales, unaligned rows, refused filters") {
  const Filter f = cuconv::test::random_filter(15, 15, 77);
  // A NaN and an infinity: their block strips are summed directly, NaN and infinities propagate as
  // in the exact sum, every other value is within the rule.
  {
    cv::Mat src = float_image(300, 700, 1, 0, 78);
    src.at<float>(40, 100) = std::numeric_limits<float>::quiet_NaN();
    src.at<float>(200, 500) = std::numeric_limits<float>::infinity();
    ConvolveOptions o;
    const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::tensor_planes_f32);
    CHECK(check_float_rule(src, f, o, "NaN and infinity", Variant::tensor) == Variant::tensor);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_f32) - before == 1u);
  }
  // Left half about 1e6, right half about 1e-3: each block scales its own window.
  {
    cv::Mat src = float_image(160, 520, 1, 0, 79);
    src(cv::Rect(0, 0, 260, 160)) *= 1e4;
    src(cv::Rect(260, 0, 260, 160)) *= 1e-5;
    ConvolveOptions o;
    CHECK(check_float_rule(src, f, o, "two scales", Variant::tensor) == Variant::tensor);
    const Filter f31 = cuconv::test::random_filter(31, 31, 80);
    CHECK(check_float_rule(src, f31, o, "two scales 31x31", Variant::tensor) == Variant::tensor);
  }
  // Zero images and a single nonzero pixel (the window's scale comes from one value).
  {
    cv::Mat zero = cv::Mat::zeros(70, 150, CV_32FC1);
    ConvolveOptions o;
    o.delta = 0.25;
    CHECK(check_float_rule(zero, f, o, "zeros", Variant::tensor) == Variant::tensor);
    zero.at<float>(35, 75) = 3.0e-38f;
    CHECK(check_float_rule(zero, f, o, "one tiny pixel", Variant::tensor) == Variant::tensor);
  }
  // Rows off their 16-byte boundaries (scalar stores) give the aligned result bit for bit.
  cuconv::test::check_unaligned_rows(float_image(45, 301, 1, 0, 81), f,
                                     cuconv::test::launches_of<gpu::KernelPath::tensor_planes_f32>, "float planes");
  // Refused: a spike among many small weights (the dropped low products pass the limit), a side
  // past 31, and a kept alpha channel: `tensor` runs `fast` for them.
  {
    const Filter spike = spike_filter();
    CHECK_FALSE(filter::dense_tensor_split_float(spike.weights, 31, 31)->holds);
    const cv::Mat src = float_image(40, 90, 4, 0, 82);
    const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::tensor_planes_f32);
    ConvolveOptions o;
    check_float_rule(src, spike, o, "spike", Variant::tensor);
    check_float_rule(src, cuconv::test::random_filter(33, 33, 83), o, "33x33", Variant::tensor);
    o.keep_alpha = true;
    o.variant = Variant::tensor;
    CHECK(convolve(src, f, o).variant_used == Variant::tensor);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_f32) == before);
  }
}

TEST_CASE("gpu tensor dense 16-bit: sums of the weights' digits meet the integer rule against the exact sum") {
  // Full-range random pixels (normalised random filters keep most results inside 0..65535), a
  // constant border value near the top.
  const std::uint64_t launches_before = cuconv::test::launches(gpu::KernelPath::tensor_planes_u16);
  const int runs = sweep(
      2900, [](const Filter& f) { return filter::dense_tensor_split_u16(f.weights, f.width, f.height, 0.0); },
      [](const Filter& f, cv::Size size, int channels, ConvolveOptions o, int index) {
        const cv::Mat src =
            random_image(size.height, size.width, CV_16U, channels, 9600 + static_cast<std::uint64_t>(index));
        o.border_value = o.border == Border::constant ? 60000 : 0;
        CHECK(cuconv::test::check_exact(src, f, o, describe(f, src, o.border, o, 0), Variant::tensor) ==
              Variant::tensor);
      });
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_u16) - launches_before ==
        static_cast<std::uint64_t>(runs));
}

TEST_CASE("gpu tensor dense 16-bit: exact ties, saturation, the largest sums, unaligned rows, refused filters") {
  // Dyadic weights: about one output in 256 is a tie here.
  check_dyadic_ties(7, 5, 256.0, 301, CV_16U, 1234, cuconv::test::launches_of<gpu::KernelPath::tensor_planes_u16>);
  // A 31x31 box (centre doubled) on white: the chains' largest sums, past 2^53 in the double join.
  check_saturation(CV_16U, cuconv::test::random_filter(17, 17, 303), 304,
                   cuconv::test::launches_of<gpu::KernelPath::tensor_planes_u16>);
  // Rows off their 16-byte boundaries (scalar stores) give the aligned result bit for bit.
  cuconv::test::check_unaligned_rows(random_image(45, 301, CV_16U, 1, 306), cuconv::test::random_filter(21, 13, 305),
                                     cuconv::test::launches_of<gpu::KernelPath::tensor_planes_u16>, "16-bit planes");
  // Flat areas of many values under a filter whose weights sum to 1/pi: some flat values sum to
  // within the bound of a tie, so the split emulates the kernel on those flat values and holds only
  // where each rounds as the exact sum (the first such filter of a few seeds is taken). Every
  // area's interior is the exact sum's value.
  {
    Filter odd;
    for (std::uint64_t seed = 310; seed < 330 && odd.weights.empty(); ++seed) {
      Filter f = cuconv::test::random_filter(15, 15, seed);
      for (double& w : f.weights) w *= 0.3183098861837907;
      if (filter::dense_tensor_split_u16(f.weights, 15, 15, 0.0)->holds) odd = f;
    }
    REQUIRE_FALSE(odd.weights.empty());
    cv::Mat src(256, 512, CV_16UC1);
    cv::RNG rng(311);
    for (int y = 0; y < src.rows; y += 32)
      for (int x = 0; x < src.cols; x += 32) src(cv::Rect(x, y, 32, 32)).setTo(rng.uniform(0, 65536));
    ConvolveOptions o;
    o.variant = Variant::tensor;
    const cuconv::test::PoisonOutputs poisoned;
    const ConvolveResult got = convolve(src, odd, o);
    CHECK(got.variant_used == Variant::tensor);
    const cv::Mat expected = cuconv::test::exact_sum(src, odd, 7, 7, o.border, 0, 0.0, CV_16U);
    const auto r = cuconv::test::compare_exact(got.image, expected);
    INFO("flat areas: max diff " << r.max_diff << ", " << r.off_by_one << " off");
    CHECK(r.max_diff <= 1.0);
    CHECK(static_cast<double>(r.off_by_one) <= 0.001 * static_cast<double>(r.values));
    for (int y = 0; y < src.rows; y += 32)
      for (int x = 0; x < src.cols; x += 32) {
        const cv::Rect interior(x + 7, y + 7, 18, 18);
        CHECK(cv::norm(got.image(interior), expected(interior), cv::NORM_INF) == 0.0);
      }
  }
  // Refused by the 16-bit kernel: a spike among 960 small weights (their rounding passes the
  // limit), a side past 31, a kept alpha channel, 16-bit input to float output. `auto` takes the
  // kernel for a 17x17 random filter (no `fast` kernel there) and leaves the refused ones.
  {
    const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::tensor_planes_u16);
    const cv::Mat src = random_image(40, 90, CV_16U, 4, 307);
    ConvolveOptions o;
    const Filter spike = spike_filter();
    CHECK_FALSE(filter::dense_tensor_split_u16(spike.weights, 31, 31, 0.0)->holds);
    o.variant = Variant::tensor;
    CHECK(convolve(src, spike, o).variant_used == Variant::tensor);
    CHECK(convolve(src, cuconv::test::random_filter(33, 33, 308), o).variant_used == Variant::tensor);
    const Filter f17 = cuconv::test::random_filter(17, 17, 309);
    o.keep_alpha = true;
    CHECK(convolve(src, f17, o).variant_used == Variant::tensor);
    o.keep_alpha = false;
    o.depth = Depth::f32;
    CHECK(convolve(src, f17, o).image.depth() == CV_32F);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_u16) == before);
    ConvolveOptions automatic;
    // 300 x 300 RGBA (1444 tiles): past the size where auto keeps 17x17 on fast's tile kernel.
    const cv::Mat larger = random_image(300, 300, CV_16U, 4, 311);
    CHECK(cuconv::test::check_exact(larger, f17, automatic, "auto 17x17") == Variant::tensor);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_u16) == before + 1);
    CHECK(choose_variant(spike, automatic, true, CV_16U, CV_16U) != Variant::tensor);
  }
}

TEST_CASE("gpu tensor dense 8-bit planes: filters past 17x17 meet the integer rule against the exact sum") {
  // The sweep's shapes with a side past 17 (the 8-bit kernel's limit), full-range pixels.
  const std::uint64_t launches_before = cuconv::test::launches(gpu::KernelPath::tensor_planes_u8);
  const std::uint64_t small_before = cuconv::test::launches(gpu::KernelPath::tensor_dense);
  const int runs = sweep(
      3100, [](const Filter& f) { return filter::dense_tensor_for(f.weights, f.width, f.height, CV_8U, CV_8U, 0.0); },
      [](const Filter& f, cv::Size size, int channels, ConvolveOptions o, int index) {
        const cv::Mat src =
            random_image(size.height, size.width, CV_8U, channels, 9900 + static_cast<std::uint64_t>(index));
        o.border_value = o.border == Border::constant ? 200 : 0;
        CHECK(cuconv::test::check_exact(src, f, o, describe(f, src, o.border, o, 0), Variant::tensor) ==
              Variant::tensor);
      },
      filter::kTensorDenseMaxSide);
  CHECK(runs > 0);
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_u8) - launches_before ==
        static_cast<std::uint64_t>(runs));
  CHECK(cuconv::test::launches(gpu::KernelPath::tensor_dense) == small_before);
}

TEST_CASE("gpu tensor dense 8-bit planes: exact ties, saturation, unaligned rows, refused filters, auto") {
  // Dyadic weights: about one output in 1024 is a tie here.
  check_dyadic_ties(19, 5, 1024.0, 401, CV_8U, 77, cuconv::test::launches_of<gpu::KernelPath::tensor_planes_u8>);
  check_saturation(CV_8U, cuconv::test::random_filter(23, 19, 403), 404,
                   cuconv::test::launches_of<gpu::KernelPath::tensor_planes_u8>);
  // Rows off their 16-byte boundaries (scalar stores) give the aligned result bit for bit.
  cuconv::test::check_unaligned_rows(random_image(45, 301, CV_8U, 1, 406), cuconv::test::random_filter(29, 21, 405),
                                     cuconv::test::launches_of<gpu::KernelPath::tensor_planes_u8>, "8-bit planes");
  // Refused: a spike among 960 small weights (their rounding passes the limit), a side past 31, a
  // kept alpha channel, 8-bit input to 16-bit output; 17x17 stays on the 8-bit kernel. `auto`
  // takes the planes kernel for a random 31x31 filter (before it: `fft`).
  {
    const std::uint64_t before = cuconv::test::launches(gpu::KernelPath::tensor_planes_u8);
    const cv::Mat src = random_image(40, 90, CV_8U, 4, 407);
    ConvolveOptions o;
    const Filter spike = spike_filter();
    CHECK_FALSE(filter::dense_tensor_for(spike.weights, 31, 31, CV_8U, CV_8U, 0.0)->holds);
    o.variant = Variant::tensor;
    CHECK(convolve(src, spike, o).variant_used == Variant::tensor);
    CHECK(convolve(src, cuconv::test::random_filter(33, 33, 408), o).variant_used == Variant::tensor);
    const Filter f31 = cuconv::test::random_filter(31, 31, 409);
    o.keep_alpha = true;
    CHECK(convolve(src, f31, o).variant_used == Variant::tensor);
    o.keep_alpha = false;
    o.depth = Depth::u16;
    CHECK(convolve(src, f31, o).image.depth() == CV_16U);
    o.depth = Depth::same;
    CHECK(convolve(src, cuconv::test::random_filter(17, 17, 410), o).variant_used == Variant::tensor);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_u8) == before);
    ConvolveOptions automatic;
    // 200 x 200 RGBA (625 tiles of 961 taps): past the size where auto keeps 31x31 on fast's tile kernel.
    const cv::Mat larger = random_image(200, 200, CV_8U, 4, 411);
    CHECK(cuconv::test::check_exact(larger, f31, automatic, "auto 31x31") == Variant::tensor);
    CHECK(cuconv::test::launches(gpu::KernelPath::tensor_planes_u8) == before + 1);
    CHECK(choose_variant(spike, automatic, true, CV_8U, CV_8U) != Variant::tensor);
  }
}
