// SPDX-License-Identifier: Apache-2.0
// Images larger than the GPU memory limit go through in horizontal strips (src/gpu/memory/strips.hpp).
// A forced strip height (test::MaxStripRows, through gpu::set_max_strip_rows) makes strips of
// 1, 2, 7 and 64 rows on small random images.
// The direct variants compute every output from the same values in the same order with or
// without strips, so the striped result must equal the unstriped one bit for bit; `fft`'s tile
// grid follows the strip, so it is held to its documented rule against cv::filter2D instead.
// Outputs are poisoned before every strip's kernel, so an unwritten row fails.
//
// CUCONV_TEST_STRIDE=N runs every 8N-th case of the sweep (compute-sanitizer runs).
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <cstdlib>
#include <string>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::kAllBorders;
using cuconv::test::random_filter;
using cuconv::test::random_image;
using cuconv::test::sweep_stride;
using cuconv::test::tested_gpu_variants;

namespace {

struct ImageType {
  int depth;
  int channels;
  double border_value;  ///< for Border::constant (16U: 12345.5 saturates to 12346, as copyMakeBorder does)
};
constexpr ImageType kTypes[] = {{CV_8U, 3, 200.0}, {CV_16U, 1, 12345.5}, {CV_32F, 4, -7.25}};
struct FilterShape {
  int kw, kh;
  int anchor_x, anchor_y;  ///< -1: the filter's centre
};
// 5x5 with its anchor in the bottom row: a strip's valid rows start 4 rows down.
constexpr FilterShape kShapes[] = {{3, 3, -1, -1}, {5, 5, 1, 4}, {1, 7, -1, -1}, {15, 15, -1, -1}, {31, 31, -1, -1}};
constexpr int kStripRows[] = {1, 2, 7, 64};
constexpr std::pair<int, int> kSizes[] = {{97, 61}, {200, 131}};

std::string describe(Variant variant, Border border, const ImageType& type, const FilterShape& shape, int cols,
                     int rows) {
  return std::string(to_string(variant)) + " " + std::string(to_string(border)) + " depth " +
         std::to_string(type.depth) + " x" + std::to_string(type.channels) + " filter " + std::to_string(shape.kw) +
         "x" + std::to_string(shape.kh) + " anchor " + std::to_string(shape.anchor_x) + "," +
         std::to_string(shape.anchor_y) + " image " + std::to_string(cols) + "x" + std::to_string(rows);
}

}  // namespace

TEST_CASE("gpu strips: forced strip heights give the unstriped result bit for bit (fft: within its rule)") {
  // Under a sanitizer (stride > 1) sample eight times more thinly: every strip is a launch of its
  // own, and strips of one row make 131 of them per run.
  const int stride = sweep_stride() > 1 ? 8 * sweep_stride() : 1;
  int index = 0;
  for (Variant variant : tested_gpu_variants()) {
    for (Border border : kAllBorders) {
      for (const ImageType& type : kTypes) {
        for (const FilterShape& shape : kShapes) {
          for (const auto& [cols, rows] : kSizes) {
            if (index++ % stride != 0) continue;
            const cv::Mat src =
                random_image(rows, cols, type.depth, type.channels, 500 + static_cast<std::uint64_t>(index));
            Filter f = random_filter(shape.kw, shape.kh, 900 + static_cast<std::uint64_t>(index));
            f.anchor_x = shape.anchor_x;
            f.anchor_y = shape.anchor_y;
            ConvolveOptions o;
            o.variant = variant;
            o.border = border;
            o.border_value = border == Border::constant ? type.border_value : 0.0;
            o.delta = index % 3 == 0 ? 2.5 : 0.0;
            const cuconv::test::PoisonOutputs poisoned;
            const std::string what = describe(variant, border, type, shape, cols, rows);
            const ConvolveResult whole = convolve(src, f, o);
            REQUIRE_MESSAGE(whole.strips == 1, what);
            REQUIRE(whole.variant_used == variant);

            cv::Mat reference;  // fft only: cv::filter2D on its direct path
            if (variant == Variant::fft) {
              ConvolveOptions ref_options = o;
              ref_options.variant = Variant::opencv;
              ref_options.opencv_method = OpenCvMethod::reference;
              reference = convolve(src, f, ref_options).image;
            }
            for (const int strip_rows : kStripRows) {
              const cuconv::test::MaxStripRows forced_strips(strip_rows);
              const ConvolveResult striped = convolve(src, f, o);
              INFO(what, ", strips of ", strip_rows, " rows");
              CHECK(striped.strips == (rows + strip_rows - 1) / strip_rows);
              if (strip_rows < rows) CHECK(striped.strips > 1);
              if (variant == Variant::fft) {
                const ComparisonStats s = compare_to_reference(striped.image, reference, src, f, o, Variant::fft);
                INFO("max diff ", s.max_abs_difference, ", ", s.differing_values, "/", s.total_values, " differ, rel ",
                     s.relative_error);
                CHECK(s.within_tolerance);
              } else {
                CHECK(bit_equal(striped.image, whole.image));
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("gpu strips: a small gpu_memory_limit cuts the image by itself, --alpha keep included") {
  // 200x131 RGBA 8U: 800-byte rows, pitched to 1024 bytes in and out. 64 KiB hold 16 rows of four
  // planes (PMPP variants) or 32 interleaved rows (fast); fft also plans for its float tile batch
  // and about 0.8 MB of whole tiles, so it gets 1.1 MB (about 36 rows).
  const cv::Mat src = random_image(131, 200, CV_8U, 4, 41);
  const Filter f = random_filter(5, 5, 42);
  for (Variant variant : tested_gpu_variants()) {
    for (bool keep_alpha : {false, true}) {
      ConvolveOptions o;
      o.variant = variant;
      o.keep_alpha = keep_alpha;
      const cuconv::test::PoisonOutputs poisoned;
      const ConvolveResult whole = convolve(src, f, o);
      o.gpu_memory_limit = variant == Variant::fft ? 1'100'000 : 64 * 1024;
      const ConvolveResult striped = convolve(src, f, o);
      INFO(std::string(to_string(variant)), keep_alpha ? " alpha keep" : "", ": ", striped.strips, " strips");
      CHECK(whole.strips == 1);
      CHECK(striped.strips > 1);
      if (variant == Variant::fft) {
        ConvolveOptions ref_options = o;
        ref_options.variant = Variant::opencv;
        ref_options.opencv_method = OpenCvMethod::reference;
        const ComparisonStats s =
            compare_to_reference(striped.image, convolve(src, f, ref_options).image, src, f, o, Variant::fft);
        INFO("max diff ", s.max_abs_difference, ", ", s.differing_values, "/", s.total_values, " differ");
        CHECK(s.within_tolerance);
        cv::Mat alpha_in, alpha_out;  // copied, not filtered: exact in every variant
        cv::extractChannel(src, alpha_in, 3);
        cv::extractChannel(striped.image, alpha_out, 3);
        if (keep_alpha) CHECK(bit_equal(alpha_in, alpha_out));
      } else {
        CHECK(bit_equal(striped.image, whole.image));
      }
    }
  }
}

TEST_CASE("gpu strips: a limit below one strip row fails with Error{gpu} for explicit variants, auto falls back") {
  const cv::Mat src = random_image(61, 97, CV_16U, 1, 7);
  const Filter f = load_filter("gauss5");
  ConvolveOptions o;
  o.gpu_memory_limit = 1000;  // below the five input rows one output row needs
  for (Variant variant : tested_gpu_variants()) {
    o.variant = variant;
    try {
      (void)convolve(src, f, o);
      FAIL("expected Error{gpu} for ", std::string(to_string(variant)));
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(e.kind() == ErrorKind::gpu);
      CHECK(std::string(e.what()).find("does not fit the GPU memory limit of 1000 bytes") != std::string::npos);
    }
  }
  o.variant = Variant::automatic;
  const ConvolveResult fallback = convolve(src, f, o);
  CHECK(fallback.variant_used == Variant::opencv);
  CHECK(fallback.fallback_reason.find("does not fit the GPU memory limit") != std::string::npos);
  ConvolveOptions cpu;
  cpu.variant = Variant::opencv;
  CHECK(bit_equal(fallback.image, convolve(src, f, cpu).image));
}
