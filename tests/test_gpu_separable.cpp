// `fast` on rank-1 filters with integer outputs whose factors do not give exact float sums
// (gaussian:R,SIGMA, box:3, ...): judged against the exact sum (double precision, rounded half
// to even, saturated) under the integer pass rule, not against cv::filter2D's own float sum.
// Cases cover output depths, channel counts, borders, anchors, fast's tile-edge sizes, real
// photos, flat areas at every byte value and a delta that puts flat areas on a tie. `tensor`'s
// dense kernel (kernels/tensor_dense.cuh) is judged the same way, over sides, anchors and
// unaligned rows. Outputs are poisoned on the device before every run, so an unwritten pixel fails.
#include "test_support.hpp"
#include "gpu/launch.hpp"
#include "separable.hpp"

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
using cuconv::test::kAllBorders;
using cuconv::test::random_image;
using cuconv::test::sample;

namespace {

double saturate(double v, int depth) {
  switch (depth) {
    case CV_8U: return std::clamp(v, 0.0, 255.0);
    case CV_16U: return std::clamp(v, 0.0, 65535.0);
    case CV_16S: return std::clamp(v, -32768.0, 32767.0);
    default: return v;
  }
}

/// The exact correlation sum of filter2D's definition in double, rounded half to even (the default
/// rounding mode of std::nearbyint) and saturated to `out_depth`; colour channels only.
cv::Mat exact_sum(const cv::Mat& src, const Filter& f, int anchor_x, int anchor_y, Border border,
                  double border_value, double delta, int out_depth) {
  cv::Mat wide;
  src.convertTo(wide, CV_MAKETYPE(CV_64F, src.channels()));
  cv::Mat padded;
  cv::copyMakeBorder(wide, padded, anchor_y, f.height - 1 - anchor_y, anchor_x, f.width - 1 - anchor_x,
                     cuconv::test::opencv_border_code(border), cv::Scalar::all(border_value));
  const int channels = src.channels();
  cv::Mat out(src.rows, src.cols, CV_MAKETYPE(out_depth, channels));
  cv::Mat exact(src.rows, src.cols, CV_MAKETYPE(CV_64F, channels));
  for (int y = 0; y < src.rows; ++y)
    for (int x = 0; x < src.cols; ++x)
      for (int c = 0; c < channels; ++c) {
        double sum = delta;
        for (int i = 0; i < f.height; ++i) {
          const double* row = padded.ptr<double>(y + i) + static_cast<std::ptrdiff_t>(x) * channels + c;
          for (int j = 0; j < f.width; ++j) sum += f.at(i, j) * row[static_cast<std::ptrdiff_t>(j) * channels];
        }
        exact.ptr<double>(y)[x * channels + c] = saturate(std::nearbyint(sum), out_depth);
      }
  exact.convertTo(out, out.type());
  return out;
}

struct RuleCount {
  double max_diff = 0;
  std::size_t off_by_one = 0;
  std::size_t values = 0;
};

RuleCount compare_exact(const cv::Mat& got, const cv::Mat& expected) {
  cv::Mat a;
  cv::Mat b;
  got.convertTo(a, CV_64F);
  expected.convertTo(b, CV_64F);
  cv::Mat diff = cv::abs(a - b);
  RuleCount r;
  cv::minMaxLoc(diff.reshape(1), nullptr, &r.max_diff);
  r.off_by_one = static_cast<std::size_t>(cv::countNonZero(diff.reshape(1) > 0.5));
  r.values = diff.total() * static_cast<std::size_t>(diff.channels());
  return r;
}

/// Runs `auto` (poisoned output) and checks the README's integer pass rule against the exact sum:
/// no value off by more than 1, at most 0.1% off by one. Returns the variant that ran.
Variant check_exact(const cv::Mat& src, const Filter& f, ConvolveOptions o, const std::string& what,
                    Variant variant = Variant::automatic) {
  o.variant = variant;
  o.poison_output = true;
  const ConvolveResult got = convolve(src, f, o);
  const int anchor_x = o.anchor_x >= 0 ? o.anchor_x : f.resolved_anchor_x();
  const int anchor_y = o.anchor_y >= 0 ? o.anchor_y : f.resolved_anchor_y();
  const int out_depth = got.image.depth();
  const cv::Mat expected = exact_sum(src, f, anchor_x, anchor_y, o.border, o.border_value, o.delta + f.offset,
                                     out_depth);
  const RuleCount r = compare_exact(got.image, expected);
  INFO(what << " ran " << to_string(got.variant_used) << ": max diff " << r.max_diff << ", " << r.off_by_one
            << " of " << r.values << " off by one");
  CHECK(r.max_diff <= 1.0);
  CHECK(static_cast<double>(r.off_by_one) <= 0.001 * static_cast<double>(r.values));
  return got.variant_used;
}

bool takes_separable(const Filter& f, int in_depth, int out_depth, double delta) {
  return detail::separable_for(f.weights, f.width, f.height, in_depth, out_depth, delta).has_value();
}

Depth depth_option(int depth) {
  switch (depth) {
    case CV_16U: return Depth::u16;
    case CV_16S: return Depth::s16;
    default: return Depth::u8;
  }
}

}  // namespace

TEST_CASE("gpu separable: inexact rank-1 filters on 8-bit input meet the pass rule against the exact sum") {
  // fast's tile edges in elements (warp 32 x kVec, block 128 x kVec) for 1, 3 and 4 channels.
  const std::pair<int, int> sizes[] = {{1, 1},     {5, 31},   {43, 32}, {128, 33}, {129, 129}, {171, 127},
                                       {172, 257}, {255, 65}, {257, 3}, {513, 255}, {683, 5},  {2047, 3}};
  const char* specs[] = {"gaussian:1,0.8", "gaussian:2,1.1", "gaussian:3,1.5", "gaussian:5,2.2",
                         "gaussian:6,2.5", "gaussian:7,3",  "box:3",          "box:5"};
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
          const std::string what = std::string(spec) + " " + std::to_string(cols) + "x" + std::to_string(rows) +
                                   "x" + std::to_string(channels) + " out depth " + std::to_string(out_depth) +
                                   " " + std::string(to_string(border));
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
      const Variant ran = check_exact(*image, f, o, std::string(spec) + " on " + std::to_string(image->cols) + "x" +
                                                        std::to_string(image->rows));
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
  o.poison_output = true;
  const ConvolveResult got = convolve(flat, f, o);
  ConvolveOptions ref = o;
  ref.variant = Variant::opencv;
  ref.opencv_method = OpenCvMethod::direct_sum;
  ref.poison_output = false;
  const ComparisonStats s = compare_to_reference(got.image, convolve(flat, f, ref).image, flat, f, o.delta);
  INFO("auto ran ", to_string(got.variant_used), ": max diff ", s.max_abs_difference, ", ", s.differing_values,
       "/", s.total_values, " differ");
  CHECK(s.within_tolerance);
}

TEST_CASE("gpu tensor: tensor-core row sums meet the pass rule against the exact sum") {
  // Tile edges of the tensor kernel: 512 elements a block, 16-row chunks, strips of 32..128 rows;
  // images narrower than the halo, and widths that are no multiple of 4 or 16.
  const std::pair<int, int> sizes[] = {{1, 1},    {7, 5},     {33, 17},  {170, 16}, {171, 31},  {512, 33},
                                       {513, 64}, {1023, 97}, {1025, 3}, {600, 129}, {2049, 18}, {4099, 40}};
  const char* specs[] = {"gaussian:1,0.8", "gaussian:2,1.1", "gaussian:3,1.5", "gaussian:4,1.9", "gaussian:5,2.2",
                         "gaussian:6,2.5", "gaussian:7,3",   "gaussian:8,3.5", "box:5",          "box:9",
                         "gauss5",         "box:17"};
  const std::uint64_t launches_before = detail::tensor_kernel_launches();
  int index = 0;
  int tensor_runs = 0;
  for (const char* spec : specs) {
    const Filter f = load_filter(spec);
    const auto factors = detail::separable_for(f.weights, f.width, f.height, CV_8U, CV_8U, f.offset);
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
        tensor_runs += factors->tensor ? 1 : 0;
      }
    }
  }
  // Every filter above splits within the rule, so each run launched the tensor-core kernel.
  CHECK(tensor_runs == index);
  CHECK(detail::tensor_kernel_launches() - launches_before == static_cast<std::uint64_t>(tensor_runs));
}

TEST_CASE("gpu tensor: photos, flat areas, exact presets and what it leaves to fast") {
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo.empty());
  cv::Mat flat(16 * 20, 16 * 20, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 20, (v / 16) * 20, 20, 20)).setTo(v);
  for (const char* spec : {"gaussian:7,3", "gaussian:8,2", "box:15"}) {
    const Filter f = load_filter(spec);
    for (const cv::Mat* image : std::initializer_list<const cv::Mat*>{&photo, &flat}) {
      ConvolveOptions o;
      CHECK(check_exact(*image, f, o, std::string(spec) + " on " + std::to_string(image->cols) + "x" +
                                          std::to_string(image->rows)) == Variant::tensor);
    }
  }
  // Dyadic presets sum exactly on both paths: `tensor` and `fast` agree bit for bit.
  for (const char* spec : {"gauss5", "gauss3", "box:4"}) {
    const Filter f = load_filter(spec);
    ConvolveOptions o;
    o.poison_output = true;
    o.variant = Variant::tensor;
    const std::uint64_t before = detail::tensor_kernel_launches();
    const cv::Mat tensor = convolve(photo, f, o).image;
    const bool centred_odd = f.width % 2 == 1;
    CHECK(detail::tensor_kernel_launches() - before == (centred_odd ? 1u : 0u));
    o.variant = Variant::fast;
    const cv::Mat fast = convolve(photo, f, o).image;
    INFO(spec);
    cv::Mat differs = tensor != fast;
    CHECK(cv::countNonZero(differs.reshape(1)) == 0);
  }
  // Off-centre anchors, a kept alpha channel and 16-bit input run fast's kernels, still in the rule.
  const std::uint64_t before = detail::tensor_kernel_launches();
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
  CHECK(detail::tensor_kernel_launches() == before);
}

TEST_CASE("gpu wide: 16-bit rank-1 filters summed in double meet the pass rule against the exact sum") {
  // Tile edges of the double-precision kernel: 256 elements a block, strips of 32..128 rows, the
  // K - 1 rows of warm-up; images narrower and shorter than the filter.
  const std::pair<int, int> sizes[] = {{1, 1},     {7, 5},    {85, 33},   {86, 129}, {255, 31},  {256, 64},
                                       {257, 97},  {600, 130}, {1000, 257}, {2049, 18}, {64, 300}, {333, 1}};
  // Every instance (sides 15, 17, ..., 31), an even side (box:16: weights past it zero) and the
  // two presets that reach 15 and 31.
  const char* specs[] = {"gaussian:7,3",  "gaussian:8,3.5", "gaussian:9,3", "gaussian:10,4", "gaussian:11,4",
                         "gaussian:12,4", "gaussian:13,5",  "gaussian:14,5", "gaussian:15,5", "box:16",
                         "box:15",        "box:31"};
  const std::uint64_t launches_before = detail::fast_wide_kernel_launches();
  int index = 0;
  for (const char* spec : specs) {
    const Filter f = load_filter(spec);
    const auto factors = detail::separable_for(f.weights, f.width, f.height, CV_16U, CV_16U, f.offset);
    REQUIRE(factors.has_value());
    REQUIRE(factors->wide);
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
        o.poison_output = true;
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
  CHECK(detail::fast_wide_kernel_launches() - launches_before == static_cast<std::uint64_t>(index));
}

TEST_CASE("gpu wide: photos and flat areas at 16 bits, auto up to 31x31, and ties left dense") {
  cv::Mat photo8 = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo8.empty());
  cv::Mat photo;
  photo8.convertTo(photo, CV_16U, 257.0);  // the full 16-bit range
  // 40 x 40 flat blocks of 256 values spread over the 16-bit range (wide enough for 31x31 inside).
  cv::Mat flat(16 * 40, 16 * 40, CV_16UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 40, (v / 16) * 40, 40, 40)).setTo(v * 257 + (v % 7));
  for (const char* spec : {"gaussian:7,3", "gaussian:11,4", "gaussian:15,5", "box:15"}) {
    const Filter f = load_filter(spec);
    for (const cv::Mat* image : std::initializer_list<const cv::Mat*>{&photo, &flat}) {
      const std::uint64_t before = detail::fast_wide_kernel_launches();
      ConvolveOptions o;
      CHECK(check_exact(*image, f, o, std::string(spec) + " on " + std::to_string(image->cols) + "x" +
                                          std::to_string(image->rows)) == Variant::fast);
      CHECK(detail::fast_wide_kernel_launches() - before == 1u);
    }
  }
  // Below 15 taps a side fast keeps its float kernels (filter2D's own results): no double sums.
  for (const char* spec : {"gauss5", "gaussian:6,2.5"}) {
    const std::uint64_t before = detail::fast_wide_kernel_launches();
    ConvolveOptions o;
    o.poison_output = true;
    const ConvolveResult got = convolve(photo, load_filter(spec), o);
    CHECK(got.variant_used == Variant::fast);
    CHECK(detail::fast_wide_kernel_launches() == before);
    CHECK(cuconv::test::compare_with_filter2d(got.image, photo, load_filter(spec), o).within_tolerance);
  }
  // A delta that puts every flat area on a tie: no double sums; auto sums densely, as filter2D does
  // (the exact sum of such a tie rounds by the weights' last bits), and stays in the rule against it.
  const Filter box = load_filter("box:3");
  CHECK_FALSE(takes_separable(box, CV_16U, CV_16U, 0.5));
  ConvolveOptions tie;
  tie.delta = 0.5;
  tie.poison_output = true;
  const std::uint64_t before = detail::fast_wide_kernel_launches();
  const ConvolveResult got = convolve(flat, box, tie);
  CHECK(detail::fast_wide_kernel_launches() == before);
  const ComparisonStats s = cuconv::test::compare_with_filter2d(got.image, flat, box, tie);
  INFO("auto ran ", to_string(got.variant_used), ": max diff ", s.max_abs_difference, ", ", s.differing_values, "/",
       s.total_values, " differ");
  CHECK(s.within_tolerance);
}

TEST_CASE("gpu tensor dense: tensor-core sums of dense filters meet the pass rule against the exact sum") {
  // Tile edges of the dense kernel: 256 pixels a block on one channel, 128 on three and four;
  // 16-row chunks, strips of 32..128 rows; widths with row ends inside a word and images smaller
  // than the filter. Filters: every side class (one k16 step up to 9 wide, k16 + k8 up to 17),
  // rectangles, and anchors at the corners.
  const std::pair<int, int> sizes[] = {{1, 1},     {5, 7},     {31, 17},  {129, 16}, {127, 31},  {256, 33},
                                       {257, 64},  {1023, 97}, {385, 3},  {600, 129}, {2049, 18}, {130, 140}};
  const std::pair<int, int> shapes[] = {{2, 2}, {3, 3}, {5, 5}, {8, 8}, {9, 9}, {10, 10}, {15, 15},
                                        {17, 17}, {17, 3}, {1, 17}, {9, 16}, {16, 4}};
  const std::uint64_t launches_before = detail::tensor_dense_kernel_launches();
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
        if (index % 4 == 1) o.anchor_x = 0;
        if (index % 4 == 2) o.anchor_y = kh - 1;
        if (index % 4 == 3) {
          o.anchor_x = kw - 1;
          o.anchor_y = 0;
        }
        if (index % 9 == 0) o.delta = 2.7;
        const auto split = detail::dense_tensor_split(f.weights, kw, kh, o.delta);
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
  CHECK(detail::tensor_dense_kernel_launches() - launches_before == static_cast<std::uint64_t>(index));
}

TEST_CASE("gpu tensor dense: photos and flat areas, auto's choice, unaligned rows, and what it leaves to fast") {
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE_FALSE(photo.empty());
  cv::Mat flat(16 * 20, 16 * 20, CV_8UC1);
  for (int v = 0; v < 256; ++v) flat(cv::Rect((v % 16) * 20, (v / 16) * 20, 20, 20)).setTo(v);
  cv::Mat rgba;
  cv::cvtColor(photo, rgba, cv::COLOR_BGR2BGRA);
  // auto sends dense 8-bit filters of more than 5x5's taps to the dense kernel.
  const std::uint64_t before = detail::tensor_dense_kernel_launches();
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
  CHECK(detail::tensor_dense_kernel_launches() - before == static_cast<std::uint64_t>(runs));

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
    o.poison_output = true;
    const std::uint64_t dyadic_before = detail::tensor_dense_kernel_launches();
    const cv::Mat got = convolve(photo, dyadic, o).image;
    CHECK(detail::tensor_dense_kernel_launches() - dyadic_before == 1u);
    const cv::Mat expected = exact_sum(photo, dyadic, dyadic.resolved_anchor_x(), dyadic.resolved_anchor_y(),
                                       o.border, 0, 0, CV_8U);
    const RuleCount r = compare_exact(got, expected);
    INFO(dyadic.origin << ": max diff " << r.max_diff << ", " << r.off_by_one << " off by one");
    CHECK(r.max_diff == 0.0);
  }

  // Rows that start off a 4-byte boundary (every staged byte through the column map) and output
  // rows off 16 bytes (byte stores) give the aligned path's result bit for bit.
  GpuWorkspace workspace;
  for (int channels : {1, 3, 4}) {
    const cv::Mat src = random_image(45, 301, CV_8U, channels, 61 + static_cast<std::uint64_t>(channels));
    const Filter f = cuconv::test::random_filter(11, 7, 62);
    ConvolveOptions o;
    o.variant = Variant::tensor;
    o.poison_output = true;
    const cv::Mat aligned = convolve(src, f, o).image;
    cv::Mat wider;
    cv::copyMakeBorder(src, wider, 0, 0, 1, 0, cv::BORDER_CONSTANT, cv::Scalar::all(9));
    const DeviceImage in = upload(wider);
    const DeviceImage out(wider.cols, wider.rows, channels, CV_8U);
    ConstDeviceImageView in_view = in.view();
    DeviceImageView out_view = out.view();
    in_view.data += channels;
    in_view.width -= 1;
    out_view.data += channels;
    out_view.width -= 1;
    const std::uint64_t dense_before = detail::tensor_dense_kernel_launches();
    CHECK(convolve(in_view, out_view, f, o, workspace, nullptr) == Variant::tensor);
    CHECK(detail::tensor_dense_kernel_launches() - dense_before == 1u);
    CAPTURE(channels);
    CHECK(cuconv::test::bit_equal(download(out_view), aligned));
  }

  // Left to fast: a kept alpha channel, 16-bit input, sides past 17, and a filter whose split
  // misses the rule (a flat area at a tie); 3x3 and 5x5 stay on fast under auto.
  const std::uint64_t none_before = detail::tensor_dense_kernel_launches();
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
  CHECK_FALSE(detail::dense_tensor_split(halves.weights, 5, 5, 0.0)->holds);
  CHECK(convolve(flat, halves, o16).variant_used == Variant::tensor);
  CHECK(detail::tensor_dense_kernel_launches() == none_before);
  ConvolveOptions automatic;
  CHECK(convolve(photo, cuconv::test::random_filter(3, 3, 13), automatic).variant_used == Variant::fast);
  CHECK(convolve(photo, f5, automatic).variant_used == Variant::fast);
}
