// SPDX-License-Identifier: Apache-2.0
// Horizontal strips (see strips.hpp).
#include "gpu/memory/strips.hpp"

#include "common/opencv_border.hpp"

#include <cuconv/error.hpp>

#include <opencv2/core.hpp>

#include <algorithm>
#include <string>

namespace cuconv::gpu {

StripPlan plan_strips(int width, int height, int kh, const MemoryModel& model, std::uint64_t limit,
                      int max_strip_rows) {
  const bool forced = max_strip_rows > 0 && max_strip_rows < height;
  if (!forced && model.bytes_for(static_cast<std::uint64_t>(height)) <= limit) return {height, 1};
  // A strip of r output rows holds r + kh - 1 input rows (its halo) on the device.
  const std::uint64_t rows_that_fit =
      limit > model.fixed_bytes && model.bytes_per_row > 0 ? (limit - model.fixed_bytes) / model.bytes_per_row : 0;
  const auto halo = static_cast<std::uint64_t>(kh - 1);
  if (rows_that_fit < halo + 1) {
    throw Error(ErrorKind::gpu, "the " + std::to_string(width) + "x" + std::to_string(height) +
                                    " image does not fit the GPU memory limit of " + std::to_string(limit) +
                                    " bytes even in strips of one output row: such a strip holds " +
                                    std::to_string(halo + 1) + " input rows and needs " +
                                    std::to_string(model.bytes_for(halo + 1)) +
                                    " bytes (raise `gpu_memory_limit`, or use `variant` opencv)");
  }
  int rows = static_cast<int>(std::min<std::uint64_t>(rows_that_fit - halo, static_cast<std::uint64_t>(height)));
  if (forced) rows = std::min(rows, max_strip_rows);
  return {rows, (height + rows - 1) / rows};
}

StripRows strip_rows(const StripPlan& plan, int index, int height, int kh, int anchor_y) {
  StripRows s;
  s.out_begin = index * plan.rows_per_strip;
  s.out_end = std::min(height, s.out_begin + plan.rows_per_strip);
  if (plan.count == 1) {  // the whole image: the kernel applies the vertical border itself
    s.in_begin = 0;
    s.in_end = height;
    return s;
  }
  s.in_begin = s.out_begin - anchor_y;
  s.in_end = s.out_end + kh - 1 - anchor_y;
  s.first_valid = anchor_y;
  return s;
}

int source_row(int y, int height, Border border) {
  return cv::borderInterpolate(y, height, common::opencv_border(border));
}

}  // namespace cuconv::gpu
