// SPDX-License-Identifier: Apache-2.0
// convolve_into on the GPU: every tested variant downloads into the caller's view (a longer row
// step than its pixels, never reallocated), whole or in strips, in place too, and gives what
// convolve() gives for the same request bit for bit, with nothing written outside the view; images
// in page-locked memory are copied straight over the link.
#include "framed_target.hpp"
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <cstring>
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

TEST_CASE("gpu convolve_into: page-locked images go over the link with no staging buffer, whole and in strips") {
  // A source and a destination (with a longer row step, its gap poisoned) in PinnedHostBuffers:
  // a fresh workspace never makes its staging buffers, and the pixels are the staged call's bit
  // for bit. The constant border's rows come from the copier's own (pageable) row.
  const cv::Mat src = random_image(70, 83, CV_16U, 3, 17);
  const Filter filter = random_filter(5, 5, 4);
  for (Variant variant : tested_gpu_variants()) {
    for (int strip_rows : {0, 16}) {
      const std::string what = std::string(to_string(variant)) + (strip_rows > 0 ? " in strips" : "");
      CAPTURE(what);
      ConvolveOptions options;
      options.variant = variant;
      options.border = Border::constant;
      options.border_value = 1000;
      const cuconv::test::MaxStripRows strips(strip_rows);
      GpuWorkspace staged;
      const ConvolveResult expected = convolve(src, filter, options, staged);
      REQUIRE(staged.pinned_bytes() > 0);  // the control: a pageable image is staged

      PinnedHostBuffer in_memory(src.total() * src.elemSize());
      const cv::Mat pinned_src(src.rows, src.cols, src.type(), in_memory.data());
      src.copyTo(pinned_src);
      const std::size_t step = src.cols * src.elemSize() + 24;
      PinnedHostBuffer out_memory(step * static_cast<std::size_t>(src.rows));
      std::memset(out_memory.data(), 0xA5, out_memory.size());
      const cv::Mat pinned_dst(src.rows, src.cols, src.type(), out_memory.data(), step);
      GpuWorkspace direct;
      const ConvolveResult into = convolve_into(pinned_src, pinned_dst, filter, options, direct);
      CHECK(into.variant_used == variant);
      if (strip_rows > 0) CHECK(into.strips > 1);
      CHECK(direct.pinned_bytes() == 0);
      CHECK(bit_equal(pinned_dst, expected.image));
      bool gaps_untouched = true;
      for (int y = 0; y < src.rows; ++y) {
        const auto* gap = pinned_dst.ptr(y) + src.cols * src.elemSize();
        for (int i = 0; i < 24; ++i) gaps_untouched = gaps_untouched && gap[i] == 0xA5;
      }
      CHECK(gaps_untouched);
    }
  }
}
