// SPDX-License-Identifier: Apache-2.0
// The `opencv` variant: cv::filter2D itself, so its output is the reference by definition.
// filter2D has no wrap border and always pads constant borders with 0; both are done here by
// padding with cv::copyMakeBorder and filtering the padded image, whose interior then sees
// exactly the requested ghost cells. Inputs are treated as whole images (BORDER_ISOLATED), even
// when they are views into a larger cv::Mat.
//
// OpenCvMethod::reference is direct_sum, in double precision for float outputs; exact_sum is
// direct_sum in double for every output, rounded once.
// OpenCvMethod::direct_sum runs the same filter2D but keeps it on its direct-summation path:
// for large kernels (>= 50 or 130 taps) filter2D otherwise switches to a DFT whose rounding
// error (~1e-5 relative) flips integer results, so a correct direct convolution would
// differ from it in far more than 0.1% of 16-bit pixels. Calling filter2D on a view that is not
// at offset (0, 0) of its parent disables the DFT path; the view's neighbours are the padding.
#include "convolve/cpu_reference.hpp"

#include "common/opencv_border.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <vector>

namespace cuconv::convolution {

namespace {

/// Padding needed so filter2D never consults its own border rule.
bool needs_padding(const ConvolveJob& job, OpenCvMethod method) {
  return method != OpenCvMethod::as_called || job.border == Border::wrap ||
         (job.border == Border::constant && job.border_value != 0.0);
}

cv::Mat filter_all_channels(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method, const cv::Mat& into) {
  const cv::Point anchor(job.anchor_x, job.anchor_y);
  cv::Mat dst = into;  // OpenCV writes into a matching image instead of allocating one
  if (!needs_padding(job, method)) {
    cv::filter2D(src, dst, job.output_depth, job.kernel, anchor, job.delta,
                 common::opencv_border(job.border) | cv::BORDER_ISOLATED);
    return dst;
  }
  // One extra pixel on the top-left keeps the view off offset (0, 0) (see direct_sum above).
  const int top = job.anchor_y + 1;
  const int left = job.anchor_x + 1;
  const int bottom = job.kh() - 1 - job.anchor_y;
  const int right = job.kw() - 1 - job.anchor_x;
  cv::Mat padded;
  cv::copyMakeBorder(src, padded, top, bottom, left, right, common::opencv_border(job.border) | cv::BORDER_ISOLATED,
                     cv::Scalar::all(job.border_value));
  const cv::Mat view = padded(cv::Rect(left, top, src.cols, src.rows));
  if (method != OpenCvMethod::as_called) {
    // Not isolated: filter2D reads the view's real neighbours, i.e. the padding.
    cv::filter2D(view, dst, job.output_depth, job.kernel, anchor, job.delta, cv::BORDER_CONSTANT);
    return dst;
  }
  cv::Mat padded_dst;
  cv::filter2D(padded, padded_dst, job.output_depth, job.kernel, anchor, job.delta, cv::BORDER_REFLECT_101);
  padded_dst(cv::Rect(left, top, src.cols, src.rows)).copyTo(dst);
  return dst;
}

}  // namespace

double stored_border_value(double value, int input_depth) {
  switch (input_depth) {
    case CV_8U:
      return cv::saturate_cast<uchar>(value);
    case CV_16U:
      return cv::saturate_cast<ushort>(value);
    default:
      return static_cast<float>(value);
  }
}

cv::Mat convolve_opencv(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method, const cv::Mat& into) {
  if (method == OpenCvMethod::exact_sum || (method == OpenCvMethod::reference && job.output_depth == CV_32F)) {
    // The same filter2D direct sum in double, rounded once at the end (convertTo: half to even
    // and saturated, as cv::saturate_cast).
    cv::Mat wide;
    src.convertTo(wide, CV_64F);
    ConvolveJob wide_job = job;
    wide_job.output_depth = CV_64F;
    cv::Mat result = into;
    convolve_opencv(wide, wide_job, OpenCvMethod::direct_sum).convertTo(result, job.output_depth);
    return result;
  }
  if (!job.keep_alpha || src.channels() != 4) return filter_all_channels(src, job, method, into);
  // --alpha keep: filter the colour channels, pass alpha through converted to the output depth.
  std::vector<cv::Mat> planes;
  cv::split(src, planes);
  cv::Mat colour;
  cv::merge(std::vector<cv::Mat>(planes.begin(), planes.begin() + 3), colour);
  std::vector<cv::Mat> out_planes;
  cv::split(filter_all_channels(colour, job, method, cv::Mat()), out_planes);
  out_planes.emplace_back();
  planes[3].convertTo(out_planes[3], job.output_depth);
  cv::Mat dst = into;
  cv::merge(out_planes, dst);
  return dst;
}

}  // namespace cuconv::convolution
