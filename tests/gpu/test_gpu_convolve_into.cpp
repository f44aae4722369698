// SPDX-License-Identifier: Apache-2.0
// convolve_into on the GPU: every tested variant downloads into the caller's view (a longer row
// step than its pixels, never reallocated), whole or in strips, in place too, and gives what
// convolve() gives for the same request bit for bit, with nothing written outside the view.
#include "framed_target.hpp"
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <string>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::FramedTarget;
using cuconv::test::random_filter;
using cuconv::test::random_image;
using cuconv::test::tested_gpu_variants;

TEST_CASE("gpu convolve_into: each variant downloads into the caller's view, whole and in strips, in place too") {
  struct Layout {
    int depth;
    int channels;
    Depth out;
  };
  constexpr Layout kLayouts[] = {{CV_8U, 3, Depth::same}, {CV_16U, 1, Depth::f32}, {CV_32F, 4, Depth::same}};
  GpuWorkspace workspace;
  for (Variant variant : tested_gpu_variants()) {
    for (const Layout& layout : kLayouts) {
      for (int strip_rows : {0, 16}) {
        const std::string what = std::string(to_string(variant)) + " depth " + std::to_string(layout.depth) + " x" +
                                 std::to_string(layout.channels) + (strip_rows > 0 ? " in strips" : "");
        CAPTURE(what);
        const cv::Mat src =
            random_image(70, 83, layout.depth, layout.channels, 90 + static_cast<std::uint64_t>(strip_rows));
        const Filter filter = random_filter(variant == Variant::fft ? 17 : 5, variant == Variant::fft ? 17 : 5, 3);
        ConvolveOptions options;
        options.variant = variant;
        options.depth = layout.out;
        options.border = Border::reflect;
        const cuconv::test::MaxStripRows strips(strip_rows);
        const ConvolveResult expected = convolve(src, filter, options, workspace);
        FramedTarget target(src.rows, src.cols, expected.image.type(), 99);
        const uchar* before = target.view.data;
        const ConvolveResult into = convolve_into(src, target.view, filter, options, workspace);
        CHECK(into.variant_used == variant);
        CHECK(into.image.data == before);
        CHECK(into.strips == expected.strips);
        if (strip_rows > 0) CHECK(into.strips > 1);
        CHECK(bit_equal(target.view, expected.image));
        CHECK(target.frame_untouched(99));
        if (layout.out == Depth::same) {  // in place: later strips must not read rows already written
          cv::Mat image = src.clone();
          static_cast<void>(convolve_into(image, image, filter, options, workspace));
          CHECK(bit_equal(image, expected.image));
        }
      }
    }
  }
}
