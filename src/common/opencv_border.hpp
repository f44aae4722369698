// SPDX-License-Identifier: Apache-2.0
#pragma once
// A border mode as OpenCV names it: the CPU reference pads with it and the GPU strips find their
// source rows with it, so both layers take it from here.
#include <cuconv/convolve.hpp>

#include <opencv2/core/base.hpp>

namespace cuconv::common {

/// The cv::BORDER_* code of a border mode (BORDER_WRAP for wrap, which filter2D itself lacks).
[[nodiscard]] inline int opencv_border(Border border) {
  switch (border) {
    case Border::reflect101:
      return cv::BORDER_REFLECT_101;
    case Border::reflect:
      return cv::BORDER_REFLECT;
    case Border::replicate:
      return cv::BORDER_REPLICATE;
    case Border::constant:
      return cv::BORDER_CONSTANT;
    case Border::wrap:
      return cv::BORDER_WRAP;
  }
  return cv::BORDER_REFLECT_101;
}

}  // namespace cuconv::common
