// SPDX-License-Identifier: Apache-2.0
#pragma once
// Horizontal strips: how an image that does not fit the device memory limit is cut, which input
// rows each strip needs, and where rows outside the image come from. Host code only (no CUDA), so
// the CPU suite tests it (tests/cpu/test_strips.cpp).
//
// A strip of output rows [r0, r1) is filtered as a whole image of its own: input rows
// [r0 - anchor_y, r1 + kh - 1 - anchor_y), the rows outside the image made on the host by the
// border rule. Its output rows from anchor_y on are the strip's; the kernel's own top/bottom
// border handling only reaches rows that are thrown away. Left and right borders stay with the
// kernel (strips span the full width), so a direct variant computes every output from the same
// values in the same order as without strips: the result is bit-identical.
#include <cuconv/convolve.hpp>

#include <cstdint>

namespace cuconv::gpu {

/// Device bytes a run needs: a fixed part plus a part per input row held on the device at once.
struct MemoryModel {
  std::uint64_t fixed_bytes = 0;
  std::uint64_t bytes_per_row = 0;
  [[nodiscard]] std::uint64_t bytes_for(std::uint64_t rows) const { return fixed_bytes + bytes_per_row * rows; }
};

/// `count` strips of `rows_per_strip` output rows each (the last may have fewer). One strip is
/// the whole image, uploaded as it is, with no halo rows.
struct StripPlan {
  int rows_per_strip = 0;
  int count = 1;
};

/// The strips for a `width` x `height` image and a filter `kh` rows tall under `limit` bytes:
/// the whole image when it fits and `max_strip_rows` (0: no forced limit) does not cut it, else
/// as many output rows per strip as fit (at most `max_strip_rows`). Throws Error{gpu} when not
/// even one output row fits.
[[nodiscard]] StripPlan plan_strips(int width, int height, int kh, const MemoryModel& model, std::uint64_t limit,
                                    int max_strip_rows);

/// One strip: output rows [out_begin, out_end) come from input rows [in_begin, in_end) (rows
/// outside [0, height) included), filtered as an image of input_rows() rows whose output rows
/// [first_valid, first_valid + output_rows()) are the strip's.
struct StripRows {
  int out_begin = 0;
  int out_end = 0;
  int in_begin = 0;
  int in_end = 0;
  int first_valid = 0;
  [[nodiscard]] int input_rows() const { return in_end - in_begin; }
  [[nodiscard]] int output_rows() const { return out_end - out_begin; }
};

/// Strip `index` of `plan` over an image of `height` rows, for a filter `kh` rows tall with its
/// anchor in row `anchor_y`.
[[nodiscard]] StripRows strip_rows(const StripPlan& plan, int index, int height, int kh, int anchor_y);

/// The image row whose pixels stand in row `y` (any integer) under `border`, as
/// cv::borderInterpolate (and the kernels' interpolate_border) maps it; -1 for Border::constant
/// outside the image (every pixel is the border value).
[[nodiscard]] int source_row(int y, int height, Border border);

}  // namespace cuconv::gpu
