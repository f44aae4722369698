// SPDX-License-Identifier: Apache-2.0
// Horizontal strips (src/gpu/memory/strips.hpp) on the CPU: the plan, the rows of each strip, the rows
// made by the border rule, and the geometry end to end with cv::filter2D standing in for the
// kernel: filtering every strip as an image of its own and keeping its valid rows must give the
// whole image's result bit for bit. The GPU suite checks the same with the real kernels
// (tests/gpu/test_gpu_strips.cpp).
#include "gpu/memory/strips.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <string>
#include <vector>

using namespace cuconv;
using cuconv::gpu::MemoryModel;
using cuconv::gpu::StripPlan;
using cuconv::gpu::StripRows;
using cuconv::test::bit_equal;
using cuconv::test::kAllBorders;
using cuconv::test::opencv_border_code;
using cuconv::test::random_filter;
using cuconv::test::random_image;

namespace {

/// Input rows [begin, end) of `image` as one image, rows outside it by the border rule: what the
/// GPU path uploads for a strip.
cv::Mat extended_rows(const cv::Mat& image, int begin, int end, Border border, double border_value) {
  cv::Mat rows(end - begin, image.cols, image.type());
  for (int y = begin; y < end; ++y) {
    const int from = gpu::source_row(y, image.rows, border);
    if (from < 0)
      rows.row(y - begin).setTo(cv::Scalar::all(border_value));
    else
      image.row(from).copyTo(rows.row(y - begin));
  }
  return rows;
}

}  // namespace

TEST_CASE("strips: the whole image when it fits, as many rows as fit otherwise, an error when one row does not") {
  const MemoryModel model{1000, 100};  // 1000 bytes fixed, 100 a row
  // 50 rows need 6000 bytes.
  StripPlan plan = gpu::plan_strips(10, 50, 5, model, 6000, 0);
  CHECK(plan.count == 1);
  CHECK(plan.rows_per_strip == 50);
  // 5999 bytes: 49 input rows fit, of which 4 are the halo of a 5-row filter.
  plan = gpu::plan_strips(10, 50, 5, model, 5999, 0);
  CHECK(plan.rows_per_strip == 45);
  CHECK(plan.count == 2);
  CHECK(model.bytes_for(45 + 4) <= 5999);
  CHECK(model.bytes_for(46 + 4) > 5999);
  // Forced: at most 7 rows a strip even though the image fits; a force at or above the height
  // changes nothing.
  plan = gpu::plan_strips(10, 50, 5, model, 1'000'000, 7);
  CHECK(plan.rows_per_strip == 7);
  CHECK(plan.count == 8);
  CHECK(gpu::plan_strips(10, 50, 5, model, 1'000'000, 50).count == 1);
  CHECK(gpu::plan_strips(10, 50, 5, model, 1'000'000, 51).count == 1);
  // The memory limit wins over a larger forced height.
  plan = gpu::plan_strips(10, 50, 5, model, 2000, 40);
  CHECK(plan.rows_per_strip == 6);
  CHECK(plan.count == 9);
  // Exactly one output row (5 input rows, 1500 bytes) fits; one byte less does not.
  CHECK(gpu::plan_strips(10, 50, 5, model, 1500, 0).rows_per_strip == 1);
  try {
    (void)gpu::plan_strips(10, 50, 5, model, 1499, 0);
    FAIL("expected Error{gpu}");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::gpu);
    const std::string message = e.what();
    CHECK(message.find("10x50 image does not fit the GPU memory limit of 1499 bytes") != std::string::npos);
    CHECK(message.find("needs 1500 bytes") != std::string::npos);
  }
  CHECK_THROWS_AS((void)gpu::plan_strips(10, 50, 5, model, 999, 0), Error);  // below the fixed part
}

TEST_CASE("strips: every output row in exactly one strip, each strip's input is its rows plus the halo") {
  for (const int height : {1, 2, 7, 61, 131}) {
    for (const int rows_per_strip : {1, 2, 7, 64}) {
      for (const auto& [filter_rows, anchor_row] :
           {std::pair{1, 0}, std::pair{3, 1}, std::pair{5, 4}, std::pair{7, 0}, std::pair{31, 15}}) {
        const int kh = filter_rows;  // plain locals: clang-tidy 14 cannot see bindings in INFO's lambda
        const int anchor_y = anchor_row;
        const StripPlan plan{rows_per_strip, (height + rows_per_strip - 1) / rows_per_strip};
        INFO("height ", height, " rows ", rows_per_strip, " kh ", kh, " anchor ", anchor_y);
        int next = 0;
        for (int i = 0; i < plan.count; ++i) {
          const StripRows s = gpu::strip_rows(plan, i, height, kh, anchor_y);
          CHECK(s.out_begin == next);
          CHECK(s.output_rows() >= 1);
          CHECK(s.output_rows() <= rows_per_strip);
          next = s.out_end;
          if (plan.count == 1) {  // the whole image as it is: the kernel does the vertical border
            CHECK(s.in_begin == 0);
            CHECK(s.in_end == height);
            CHECK(s.first_valid == 0);
          } else {
            CHECK(s.in_begin == s.out_begin - anchor_y);
            CHECK(s.input_rows() == s.output_rows() + kh - 1);
            CHECK(s.first_valid == anchor_y);
          }
        }
        CHECK(next == height);
      }
    }
  }
}

TEST_CASE("strips: rows outside the image are the rows cv::copyMakeBorder puts there, also many filter heights out") {
  for (const Border border : kAllBorders) {
    for (const int height : {1, 2, 5, 9}) {
      const cv::Mat image = random_image(height, 3, CV_8U, 1, static_cast<std::uint64_t>(height));
      const int pad = 40;  // more than four times the image: several reflections
      cv::Mat padded;
      cv::copyMakeBorder(image, padded, pad, pad, 0, 0, opencv_border_code(border) | cv::BORDER_ISOLATED,
                         cv::Scalar::all(77));
      const cv::Mat rows = extended_rows(image, -pad, height + pad, border, 77);
      INFO(std::string(to_string(border)), " height ", height);
      CHECK(bit_equal(rows, padded));
    }
  }
}

TEST_CASE("strips: each strip filtered as an image of its own gives the whole image's result (filter2D as kernel)") {
  struct FilterShape {
    int kw, kh, anchor_x, anchor_y;  // -1: the centre
  };
  const FilterShape shapes[] = {{3, 3, -1, -1}, {5, 5, 1, 4},     {1, 7, -1, -1},
                                {7, 1, -1, -1}, {15, 15, -1, -1}, {31, 31, -1, -1}};
  struct ImageType {
    int depth, channels;
  };
  const ImageType types[] = {{CV_8U, 3}, {CV_16U, 1}, {CV_32F, 4}};
  int index = 0;
  for (const Border border : kAllBorders) {
    for (const ImageType type : types) {
      for (const FilterShape shape : shapes) {
        ++index;
        const int cols = index % 2 == 0 ? 23 : 40;
        const int height = index % 2 == 0 ? 17 : 9;  // 9 rows: the 15x15 and 31x31 filters are taller
        const cv::Mat image = random_image(height, cols, type.depth, type.channels, static_cast<std::uint64_t>(index));
        Filter filter = random_filter(shape.kw, shape.kh, static_cast<std::uint64_t>(index));
        filter.anchor_x = shape.anchor_x;
        filter.anchor_y = shape.anchor_y;
        ConvolveOptions o;
        o.variant = Variant::opencv;
        o.opencv_method = OpenCvMethod::direct_sum;  // the same sums for every row, as a direct kernel
        o.border = border;
        o.border_value = border == Border::constant ? 99.0 : 0.0;
        o.delta = 1.5;
        const cv::Mat whole = convolve(image, filter, o).image;
        const int anchor_y = shape.anchor_y >= 0 ? shape.anchor_y : shape.kh / 2;
        for (const int rows_per_strip : {1, 2, 7}) {
          const StripPlan plan{rows_per_strip, (height + rows_per_strip - 1) / rows_per_strip};
          cv::Mat striped(whole.size(), whole.type(), cv::Scalar::all(-1));
          for (int i = 0; i < plan.count; ++i) {
            const StripRows s = gpu::strip_rows(plan, i, height, shape.kh, anchor_y);
            const cv::Mat strip = extended_rows(image, s.in_begin, s.in_end, border, o.border_value);
            const cv::Mat filtered = convolve(strip, filter, o).image;
            filtered.rowRange(s.first_valid, s.first_valid + s.output_rows())
                .copyTo(striped.rowRange(s.out_begin, s.out_end));
          }
          INFO(std::string(to_string(border)), " ", shape.kw, "x", shape.kh, " anchor ", shape.anchor_x, ",",
               shape.anchor_y, " depth ", type.depth, " x", type.channels, " ", cols, "x", height, " strips of ",
               rows_per_strip);
          CHECK(bit_equal(striped, whole));
        }
      }
    }
  }
}
