// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers the output-format suites share: a byte-for-byte image comparison and a float image with
// the values lossy codecs get wrong.
#include "test_support.hpp"

#include <opencv2/core.hpp>

#include <cstring>
#include <iterator>
#include <limits>

namespace cuconv::test {

/// Same size, type and bytes: -0.0 differs from 0.0, a NaN equals the same NaN.
inline bool same_bytes(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  const std::size_t row_bytes = static_cast<std::size_t>(a.cols) * a.elemSize();
  for (int r = 0; r < a.rows; ++r)
    if (std::memcmp(a.ptr(r), b.ptr(r), row_bytes) != 0) return false;
  return true;
}

/// A random float image with the values lossy codecs get wrong: negatives, -0, tiny and huge
/// magnitudes, infinities and NaN.
inline cv::Mat awkward_float_image(int channels) {
  cv::Mat image = random_image(37, 29, CV_32F, channels, 23);
  float* values = image.ptr<float>(0);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float specials[] = {-0.0F, 1e-40F, -3.4e38F, 3.4e38F, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(),
                            -1e-7F};
  for (std::size_t i = 0; i < std::size(specials); ++i) values[i] = specials[i];
  return image;
}

}  // namespace cuconv::test
