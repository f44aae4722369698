// SPDX-License-Identifier: Apache-2.0
// The `opencv` variant against direct cv::filter2D calls and a brute-force reference for the
// borders filter2D lacks: output-depth rules, anchors, views, rounding, alpha and workspaces.
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::kernel_matrix;
using cuconv::test::random_image;
using cuconv::test::sample;

namespace {

/// Brute-force correlation in double with an explicit border rule, rounded like saturate_cast.
cv::Mat brute_force(const cv::Mat& src, const Filter& f, int ax, int ay, double delta, Border border,
                    double border_value, int out_depth) {
  cv::Mat src64;
  src.convertTo(src64, CV_MAKETYPE(CV_64F, src.channels()));
  cv::Mat acc(src.rows, src.cols, CV_MAKETYPE(CV_64F, src.channels()), cv::Scalar::all(delta));
  const int cn = src.channels();
  auto map = [&](int p, int len) -> int {
    if (p >= 0 && p < len) return p;
    if (border == Border::constant) return -1;
    if (border == Border::wrap) return ((p % len) + len) % len;
    return cv::borderInterpolate(p, len,
                                 border == Border::reflect     ? cv::BORDER_REFLECT
                                 : border == Border::replicate ? cv::BORDER_REPLICATE
                                                               : cv::BORDER_REFLECT_101);
  };
  for (int y = 0; y < src.rows; ++y)
    for (int x = 0; x < src.cols; ++x)
      for (int i = 0; i < f.height; ++i)
        for (int j = 0; j < f.width; ++j) {
          const int sy = map(y + i - ay, src.rows);
          const int sx = map(x + j - ax, src.cols);
          for (int c = 0; c < cn; ++c) {
            const double v = sy < 0 || sx < 0 ? border_value : src64.ptr<double>(sy)[sx * cn + c];
            acc.ptr<double>(y)[x * cn + c] += f.at(i, j) * v;
          }
        }
  cv::Mat out;
  acc.convertTo(out, CV_MAKETYPE(out_depth, cn));
  return out;
}

}  // namespace

TEST_CASE("output depth rules are exactly those cv::filter2D accepts") {
  const cv::Mat k = cv::Mat::ones(3, 3, CV_32F);
  for (int in_depth : {CV_8U, CV_16U, CV_32F}) {
    for (Depth d : {Depth::u8, Depth::u16, Depth::s16, Depth::f32}) {
      const int wanted = d == Depth::u8 ? CV_8U : d == Depth::u16 ? CV_16U : d == Depth::s16 ? CV_16S : CV_32F;
      bool opencv_ok = true;
      try {
        cv::Mat dst;
        cv::filter2D(cv::Mat(4, 4, CV_MAKETYPE(in_depth, 1), cv::Scalar(1)), dst, wanted, k);
      } catch (const cv::Exception&) {
        opencv_ok = false;
      }
      INFO("input ", depth_name(in_depth), " output ", to_string(d));
      if (opencv_ok) {
        CHECK(resolve_output_depth(in_depth, d) == wanted);
      } else {
        CHECK_THROWS_AS((void)resolve_output_depth(in_depth, d), cuconv::Error);
      }
    }
    CHECK(resolve_output_depth(in_depth, Depth::same) == in_depth);
  }
}

TEST_CASE("opencv variant equals a direct cv::filter2D call for every filter2D border") {
  const cv::Mat camera = read_image(sample("camera.png"));
  const cv::Mat coffee = read_image(sample("coffee.png"));
  const std::pair<Border, int> borders[] = {{Border::reflect101, cv::BORDER_REFLECT_101},
                                            {Border::reflect, cv::BORDER_REFLECT},
                                            {Border::replicate, cv::BORDER_REPLICATE},
                                            {Border::constant, cv::BORDER_CONSTANT}};
  for (const char* spec : {"gauss5", "sharpen", "3x2+0+1:1,-2,3,0.5,0.25,-1", "gaussian:7,2.5", "box:4"}) {
    const Filter f = load_filter(spec);
    for (const auto& [border, cv_border] : borders) {
      for (const cv::Mat* img : {&camera, &coffee}) {
        ConvolveOptions o;
        o.variant = Variant::opencv;
        o.border = border;
        o.delta = 3.5;
        const ConvolveResult r = convolve(*img, f, o);
        cv::Mat expected;
        cv::filter2D(*img, expected, -1, kernel_matrix(f), cv::Point(f.resolved_anchor_x(), f.resolved_anchor_y()), 3.5,
                     cv_border);
        const auto border_name = to_string(border);  // clang 14 cannot capture a structured binding (INFO does)
        INFO("filter ", spec, " border ", border_name);
        CHECK(r.variant_used == Variant::opencv);
        CHECK(bit_equal(r.image, expected));
      }
    }
  }
}

TEST_CASE("opencv variant equals a direct cv::filter2D call for --anchor, every filter2D border and depth pair") {
  // The GPU suites and --compare judge against this variant, so its anchor, border, delta and
  // output depth are checked here against filter2D called by hand, not through make_job.
  const std::pair<Border, int> borders[] = {{Border::reflect101, cv::BORDER_REFLECT_101},
                                            {Border::reflect, cv::BORDER_REFLECT},
                                            {Border::replicate, cv::BORDER_REPLICATE},
                                            {Border::constant, cv::BORDER_CONSTANT}};
  const Filter f = load_filter("3x2:1,-2,3,0.5,0.25,-1");  // no anchor of its own: the option sets it
  for (const int in_depth : {CV_8U, CV_16U, CV_32F}) {
    const cv::Mat src = random_image(29, 41, in_depth, 3, 77);
    for (const Depth d : {Depth::same, Depth::u16, Depth::s16, Depth::f32}) {
      int out_depth = 0;
      try {
        out_depth = resolve_output_depth(in_depth, d);
      } catch (const cuconv::Error&) {
        continue;  // a pair filter2D refuses (checked above)
      }
      for (const cv::Point anchor : {cv::Point(0, 0), cv::Point(2, 1), cv::Point(1, 0), cv::Point(0, 1)}) {
        for (const auto& [border, cv_border] : borders) {
          ConvolveOptions o;
          o.variant = Variant::opencv;
          o.border = border;
          o.anchor_x = anchor.x;
          o.anchor_y = anchor.y;
          o.delta = -1.5;
          o.depth = d;
          cv::Mat expected;
          cv::filter2D(src, expected, out_depth, kernel_matrix(f), anchor, -1.5, cv_border);
          const auto border_name = to_string(border);  // clang 14 cannot capture a structured binding
          INFO("input ", depth_name(in_depth), " output ", depth_name(out_depth), " anchor ", anchor.x, ",", anchor.y,
               " border ", border_name);
          CHECK(bit_equal(convolve(src, f, o).image, expected));
        }
      }
    }
  }
}

TEST_CASE("direct_sum reference: bit-equal to filter2D where it sums directly, within the rule where it uses a DFT") {
  const cv::Mat camera = read_image(sample("camera.png"));
  const cv::Mat chess16 = random_image(97, 131, CV_16U, 1, 21);
  for (const char* spec : {"gauss5", "sobel-y", "box:31", "gaussian:15,4"}) {
    const Filter f = load_filter(spec);
    for (Border border : {Border::reflect101, Border::reflect, Border::replicate, Border::constant, Border::wrap}) {
      for (const cv::Mat* img : {&camera, &chess16}) {
        ConvolveOptions o;
        o.variant = Variant::opencv;
        o.border = border;
        const cv::Mat as_called = convolve(*img, f, o).image;
        o.opencv_method = OpenCvMethod::direct_sum;
        const cv::Mat direct = convolve(*img, f, o).image;
        INFO(spec, " ", to_string(border), " depth ", img->depth());
        if (f.width * f.height < 50) {
          CHECK(bit_equal(direct, as_called));  // both sum directly
        } else if (img->depth() == CV_8U) {
          CHECK(compare_to_reference(direct, as_called, *img, f, 0).within_tolerance);
        } else {  // 16U DFT noise: still never more than 1 apart
          CHECK(compare_to_reference(direct, as_called, *img, f, 0).max_abs_difference <= 1);
        }
      }
    }
  }
}

TEST_CASE("a view into a larger image is filtered as a whole image (no neighbours leak in)") {
  const cv::Mat big = random_image(40, 50, CV_8U, 3, 17);
  const cv::Mat view = big(cv::Rect(5, 7, 20, 18));
  for (OpenCvMethod method : {OpenCvMethod::as_called, OpenCvMethod::direct_sum}) {
    ConvolveOptions o;
    o.variant = Variant::opencv;
    o.opencv_method = method;
    CHECK(bit_equal(convolve(view, load_filter("gauss7"), o).image,
                    convolve(view.clone(), load_filter("gauss7"), o).image));
  }
}

TEST_CASE("wrap and non-zero constant borders match a brute-force reference") {
  for (Border border : {Border::wrap, Border::constant, Border::reflect, Border::reflect101, Border::replicate}) {
    for (const char* spec : {"5x3+1+2:1,2,3,4,5,-1,-2,-3,-4,-5,0.5,0.25,0.125,1,2", "gauss3",
                             "7x7:0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,"
                             "0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0."
                             "02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02,0.02"}) {
      const Filter f = load_filter(spec);
      for (auto [rows, cols] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{9, 13}, std::pair{17, 5}}) {
        const cv::Mat src = random_image(rows, cols, CV_32F, 3, 42 + rows * 100 + cols);
        ConvolveOptions o;
        o.variant = Variant::opencv;
        o.border = border;
        o.border_value = border == Border::constant ? 7.25 : 0.0;
        const cv::Mat got = convolve(src, f, o).image;
        o.opencv_method = OpenCvMethod::direct_sum;
        CHECK(cv::norm(convolve(src, f, o).image, got, cv::NORM_INF) < 1e-2);
        const cv::Mat want =
            brute_force(src, f, f.resolved_anchor_x(), f.resolved_anchor_y(), 0.0, border, o.border_value, CV_32F);
        const int width = cols;  // clang 14 cannot capture a structured binding (INFO does)
        const int height = rows;
        INFO("border ", to_string(border), " filter ", spec, " size ", width, "x", height);
        CHECK(cv::norm(got, want, cv::NORM_INF) < 1e-2);  // float sums of up to ~4000
      }
    }
  }
}

TEST_CASE("integer output is rounded half to even and saturated, as cv::saturate_cast") {
  // 0.5 steps: box 2x1 over (1, 2) gives 1.5 -> 2, over (2, 3) gives 2.5 -> 2.
  cv::Mat src = (cv::Mat_<uchar>(1, 6) << 1, 2, 3, 250, 255, 255);
  const Filter f = load_filter("2x1+0+0:0.5,0.5");
  ConvolveOptions o;
  o.variant = Variant::opencv;
  o.delta = 0;
  const cv::Mat got = convolve(src, f, o).image;
  CHECK(got.at<uchar>(0, 0) == 2);    // 1.5
  CHECK(got.at<uchar>(0, 1) == 2);    // 2.5
  CHECK(got.at<uchar>(0, 2) == 126);  // 126.5
  o.delta = 10;
  CHECK(convolve(src, f, o).image.at<uchar>(0, 4) == 255);  // 265 saturates
}

TEST_CASE("--alpha keep passes alpha through, filter mode filters it") {
  cv::Mat src = random_image(20, 30, CV_8U, 4, 7);
  const Filter f = load_filter("gauss5");
  ConvolveOptions o;
  o.variant = Variant::opencv;
  o.keep_alpha = true;
  const cv::Mat kept = convolve(src, f, o).image;
  cv::Mat alpha_in, alpha_out;
  cv::extractChannel(src, alpha_in, 3);
  cv::extractChannel(kept, alpha_out, 3);
  CHECK(bit_equal(alpha_in, alpha_out));
  o.keep_alpha = false;
  cv::extractChannel(convolve(src, f, o).image, alpha_out, 3);
  CHECK_FALSE(bit_equal(alpha_in, alpha_out));
}

TEST_CASE("anchor outside the filter is a usage error") {
  const cv::Mat src = random_image(8, 8, CV_8U, 1, 3);
  ConvolveOptions o;
  o.variant = Variant::opencv;
  o.anchor_x = 3;
  o.anchor_y = 0;
  try {
    (void)convolve(src, load_filter("gauss3"), o);
    FAIL("no exception");
  } catch (const cuconv::Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("outside") != std::string::npos);
  }
}

TEST_CASE("a GpuWorkspace changes nothing for the opencv variant and holds no memory for it") {
  const cv::Mat src = random_image(37, 53, CV_8U, 3, 11);
  const Filter filter = load_filter("gauss5");
  ConvolveOptions options;
  options.variant = Variant::opencv;
  GpuWorkspace workspace;
  const ConvolveResult with = convolve(src, filter, options, workspace);
  CHECK(with.variant_used == Variant::opencv);
  CHECK(bit_equal(with.image, convolve(src, filter, options).image));
  CHECK(workspace.device_bytes() == 0);
  CHECK(workspace.pinned_bytes() == 0);
  CHECK(workspace.allocations() == 0);
}
