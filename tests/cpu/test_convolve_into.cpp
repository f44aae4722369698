// SPDX-License-Identifier: Apache-2.0
// convolve_into on the CPU: the result lands in the caller's image (a view into a larger buffer,
// never reallocated), equal bit for bit to convolve()'s, on every OpenCV path (plain, padded
// borders, the exact sum, alpha kept, the CPU's separable path), in place as cv::filter2D allows,
// and a refused request leaves the caller's pixels as they were.
#include "framed_target.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <limits>
#include <string>
#include <vector>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::random_filter;
using cuconv::test::random_image;

using cuconv::test::FramedTarget;

TEST_CASE("convolve_into: the result lands in the caller's view, equal to convolve's, on every CPU path") {
  struct Case {
    const char* what;
    int depth;
    int channels;
    Depth out;
    Border border;
    OpenCvMethod method;
    bool keep_alpha;
    Variant variant;
    const char* filter;  ///< nullptr: a random 5x5
  };
  const Case cases[] = {
      {"plain 8U -> 16S", CV_8U, 3, Depth::s16, Border::reflect101, OpenCvMethod::as_called, false, Variant::opencv,
       nullptr},
      {"wrap border (padded)", CV_16U, 1, Depth::f32, Border::wrap, OpenCvMethod::as_called, false, Variant::opencv,
       nullptr},
      {"constant 7 (padded)", CV_32F, 4, Depth::same, Border::constant, OpenCvMethod::as_called, false, Variant::opencv,
       nullptr},
      {"direct sum", CV_8U, 1, Depth::same, Border::reflect, OpenCvMethod::direct_sum, false, Variant::opencv, nullptr},
      {"exact sum", CV_16U, 3, Depth::same, Border::replicate, OpenCvMethod::exact_sum, false, Variant::opencv,
       nullptr},
      {"alpha kept", CV_8U, 4, Depth::f32, Border::reflect101, OpenCvMethod::as_called, true, Variant::opencv, nullptr},
      {"auto without a GPU, separable", CV_8U, 3, Depth::same, Border::reflect101, OpenCvMethod::as_called, false,
       Variant::automatic, "gauss5"},
  };
  const bool gpu = cuda_device_available();
  GpuWorkspace workspace;
  for (const Case& c : cases) {
    CAPTURE(c.what);
    if (c.variant == Variant::automatic && gpu) continue;  // auto would pick a GPU variant here
    const cv::Mat src = random_image(37, 53, c.depth, c.channels, 71);
    const Filter filter = c.filter != nullptr ? load_filter(c.filter) : random_filter(5, 5, 19);
    ConvolveOptions options;
    options.variant = c.variant;
    options.depth = c.out;
    options.border = c.border;
    options.border_value = 7;
    options.opencv_method = c.method;
    options.keep_alpha = c.keep_alpha;
    options.delta = 0.5;
    const ConvolveResult expected = convolve(src, filter, options);
    FramedTarget target(src.rows, src.cols, expected.image.type(), 99);
    const uchar* before = target.view.data;
    const ConvolveResult into = convolve_into(src, target.view, filter, options, workspace);
    CHECK(into.image.data == before);  // the caller's memory, not a copy
    CHECK(target.view.data == before);
    CHECK(into.variant_used == Variant::opencv);
    CHECK(bit_equal(target.view, expected.image));
    CHECK(target.frame_untouched(99));
  }
}

TEST_CASE("convolve_into: in place (dst is src) gives convolve's result") {
  GpuWorkspace workspace;
  for (const Border border : {Border::reflect101, Border::wrap}) {
    CAPTURE(to_string(border));
    cv::Mat image = random_image(40, 41, CV_8U, 3, 5);
    const Filter filter = random_filter(7, 3, 8);
    ConvolveOptions options;
    options.variant = Variant::opencv;
    options.border = border;
    const ConvolveResult expected = convolve(image, filter, options);
    static_cast<void>(convolve_into(image, image, filter, options, workspace));
    CHECK(bit_equal(image, expected.image));
    // Overlapping but not equal: the output starts one row below the input in one buffer.
    cv::Mat buffer = random_image(41, 41, CV_8U, 3, 6);
    const cv::Mat src = buffer.rowRange(0, 40).clone();
    const ConvolveResult shifted = convolve(src, filter, options);
    static_cast<void>(convolve_into(buffer.rowRange(0, 40), buffer.rowRange(1, 41), filter, options, workspace));
    CHECK(bit_equal(buffer.rowRange(1, 41), shifted.image));
  }
}

TEST_CASE("convolve_into: a refused request writes nothing to the caller's image") {
  GpuWorkspace workspace;
  const cv::Mat src = random_image(20, 30, CV_8U, 3, 2);
  const Filter filter = random_filter(3, 3, 4);
  ConvolveOptions options;
  options.variant = Variant::opencv;
  const auto refused = [&](const cv::Mat& dst, const ConvolveOptions& o, const std::string& words) {
    CAPTURE(words);
    cv::Mat kept = dst.clone();
    try {
      static_cast<void>(convolve_into(src, dst, filter, o, workspace));
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
    CHECK(bit_equal(dst, kept));
  };
  cv::Mat wrong_size(20, 29, CV_8UC3, cv::Scalar::all(3));
  refused(wrong_size, options, "the output image must be 30x20 with 3 channel(s) of depth 8U, not 29x20");
  cv::Mat wrong_depth(20, 30, CV_16SC3, cv::Scalar::all(3));
  refused(wrong_depth, options, "not 30x20 with 3 of 16S");
  cv::Mat wrong_channels(20, 30, CV_8UC1, cv::Scalar::all(3));
  refused(wrong_channels, options, "not 30x20 with 1 of 8U");
  cv::Mat right(20, 30, CV_8UC3, cv::Scalar::all(3));
  ConvolveOptions bad_anchor = options;
  bad_anchor.anchor_x = 5;
  refused(right, bad_anchor, "anchor (5,1) is outside the 3x3 filter");
  ConvolveOptions bad_delta = options;
  bad_delta.delta = std::numeric_limits<double>::quiet_NaN();
  refused(right, bad_delta, "must be finite numbers");
}
