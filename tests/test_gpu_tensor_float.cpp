// `tensor` on float images: the dense kernel in block floating point on byte MMAs
// (kernels/tensor_dense_float.cuh), judged against the exact double sum under the 32F pass rule
// over filter sizes (every chunk count and both ring depths), anchors, channel counts, borders, the
// kernel's tile edges, value ranges from 1e-30 to 1e30 and mixed magnitudes; windows holding a NaN
// or an infinity (summed directly by their block); unaligned rows; filters the split refuses.
// Outputs are poisoned on the device before every run, and launch counters show which kernel ran.
#include "exact_sum.hpp"
#include "test_support.hpp"
#include "gpu/launch.hpp"
#include "separable.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

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
      case 1: *it = static_cast<float>(std::abs(*it) * 1e-32); break;
      case 2: *it = static_cast<float>(*it * 1e28); break;
      case 3: *it = std::ldexp(*it / 100.0f, rng.uniform(-40, 41)); break;
      default: break;
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

TEST_CASE("gpu tensor dense float: block floating point sums meet the 32F rule against the exact sum") {
  // Tile edges: 128 pixels a block, 16-row chunks, strips of 32..128 rows; images smaller than the
  // filter. Shapes: every chunk count (kw up to 9, 17, 25, 31; 26..31 in column-major K, whose slot
  // size follows kh % 8), both rings (kh up to 17, past it), rectangles, single rows and columns.
  const std::pair<int, int> sizes[] = {{1, 1},    {5, 7},    {31, 17},  {127, 16}, {128, 33}, {129, 31},
                                       {257, 64}, {300, 97}, {385, 3},  {200, 129}, {130, 140}};
  const std::pair<int, int> shapes[] = {{3, 3},   {5, 5},   {9, 9},   {10, 10}, {15, 15}, {17, 17}, {18, 18},
                                        {25, 25}, {31, 31}, {31, 1},  {1, 31},  {7, 20},  {26, 9},  {2, 2},
                                        {27, 18}, {30, 13}, {28, 12}};
  const std::uint64_t launches_before = detail::tensor_dense_float_kernel_launches();
  int index = 0;
  for (const auto& [kw, kh] : shapes) {
    const Filter f = cuconv::test::random_filter(kw, kh, 1900 + static_cast<std::uint64_t>(kw * 32 + kh));
    const auto split = detail::dense_tensor_split_float(f.weights, kw, kh);
    REQUIRE(split.has_value());
    REQUIRE(split->holds);
    for (int channels : {1, 3, 4}) {
      for (Border border : kAllBorders) {
        ++index;
        const auto [cols, rows] = sizes[static_cast<std::size_t>(index * 7 + channels) % std::size(sizes)];
        const int kind = index % 4;
        const cv::Mat src = float_image(rows, cols, channels, kind, 9100 + static_cast<std::uint64_t>(index));
        ConvolveOptions o;
        o.border = border;
        o.border_value = border == Border::constant ? (kind == 1 ? 3e-31 : -41.5) : 0;
        cuconv::test::cycle_anchor(o, index, kw, kh);
        if (index % 9 == 0) o.delta = 2.7;
        CHECK(check_float_rule(src, f, o, describe(f, src, border, o, kind), Variant::tensor) == Variant::tensor);
      }
    }
  }
  CHECK(detail::tensor_dense_float_kernel_launches() - launches_before == static_cast<std::uint64_t>(index));
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
    const std::uint64_t before = detail::tensor_dense_float_kernel_launches();
    CHECK(check_float_rule(src, f, o, "NaN and infinity", Variant::tensor) == Variant::tensor);
    CHECK(detail::tensor_dense_float_kernel_launches() - before == 1u);
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
  {
    GpuWorkspace workspace;
    const cv::Mat src = float_image(45, 301, 1, 0, 81);
    ConvolveOptions o;
    o.variant = Variant::tensor;
    o.poison_output = true;
    const cv::Mat aligned = convolve(src, f, o).image;
    const std::uint64_t before = detail::tensor_dense_float_kernel_launches();
    const auto [ran, shifted] = cuconv::test::convolve_one_pixel_in(src, f, o, workspace);
    CHECK(ran == Variant::tensor);
    CHECK(detail::tensor_dense_float_kernel_launches() - before == 1u);
    CHECK(cuconv::test::bit_equal(shifted, aligned));
  }
  // Refused: a spike among many small weights (the dropped low products pass the limit), a side
  // past 31, and a kept alpha channel: `tensor` runs `fast` for them.
  {
    Filter spike;
    spike.width = spike.height = 31;
    spike.weights.assign(31 * 31, 1e-3);
    spike.weights[480] = 1.0;
    spike.origin = "spike in 1e-3";
    CHECK_FALSE(detail::dense_tensor_split_float(spike.weights, 31, 31)->holds);
    const cv::Mat src = float_image(40, 90, 4, 0, 82);
    const std::uint64_t before = detail::tensor_dense_float_kernel_launches();
    ConvolveOptions o;
    check_float_rule(src, spike, o, "spike", Variant::tensor);
    check_float_rule(src, cuconv::test::random_filter(33, 33, 83), o, "33x33", Variant::tensor);
    o.keep_alpha = true;
    o.variant = Variant::tensor;
    CHECK(convolve(src, f, o).variant_used == Variant::tensor);
    CHECK(detail::tensor_dense_float_kernel_launches() == before);
  }
}
