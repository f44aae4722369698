// SPDX-License-Identifier: Apache-2.0
#pragma once
// A caller's output image for convolve_into's tests: a view with a longer row step than its
// pixels inside a buffer framed by a sentinel, so a result written outside the view shows.
#include <opencv2/core.hpp>

namespace cuconv::test {

/// A buffer with a frame of `sentinel` around a rows x cols view of `type`: the view has a row
/// step longer than its pixels, so a result written anywhere but into the view shows.
struct FramedTarget {
  cv::Mat buffer;
  cv::Mat view;
  FramedTarget(int rows, int cols, int type, double sentinel)
      : buffer(rows + 4, cols + 7, type, cv::Scalar::all(sentinel)), view(buffer(cv::Rect(3, 2, cols, rows))) {}
  /// Whether every value outside the view is still `sentinel`.
  [[nodiscard]] bool frame_untouched(double sentinel) const {
    cv::Mat frame = buffer.clone();
    frame(cv::Rect(3, 2, view.cols, view.rows)).setTo(cv::Scalar::all(sentinel));
    return cv::countNonZero(frame.reshape(1) != sentinel) == 0;
  }
};

}  // namespace cuconv::test
