// The `opencv` variant: cv::filter2D itself, so its output is the reference by definition.
// filter2D has no wrap border and always pads constant borders with 0; both are done here by
// padding with cv::copyMakeBorder and filtering the padded image, whose interior then sees
// exactly the requested ghost cells.
#include "job.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <vector>

namespace cuconv::detail {

namespace {
int opencv_border(Border border) {
  switch (border) {
    case Border::reflect101: return cv::BORDER_REFLECT_101;
    case Border::reflect: return cv::BORDER_REFLECT;
    case Border::replicate: return cv::BORDER_REPLICATE;
    case Border::constant: return cv::BORDER_CONSTANT;
    case Border::wrap: return cv::BORDER_WRAP;
  }
  return cv::BORDER_REFLECT_101;
}

/// Padding needed so filter2D never consults its own border rule.
bool needs_padding(const ConvolveJob& job) {
  return job.border == Border::wrap || (job.border == Border::constant && job.border_value != 0.0);
}

cv::Mat filter_all_channels(const cv::Mat& src, const ConvolveJob& job) {
  const cv::Point anchor(job.anchor_x, job.anchor_y);
  cv::Mat dst;
  if (!needs_padding(job)) {
    cv::filter2D(src, dst, job.output_depth, job.kernel, anchor, job.delta, opencv_border(job.border));
    return dst;
  }
  const int top = job.anchor_y;
  const int left = job.anchor_x;
  const int bottom = job.kh() - 1 - job.anchor_y;
  const int right = job.kw() - 1 - job.anchor_x;
  cv::Mat padded;
  cv::copyMakeBorder(src, padded, top, bottom, left, right, opencv_border(job.border),
                     cv::Scalar::all(job.border_value));
  cv::Mat padded_dst;
  cv::filter2D(padded, padded_dst, job.output_depth, job.kernel, anchor, job.delta,
               cv::BORDER_REFLECT_101);
  padded_dst(cv::Rect(left, top, src.cols, src.rows)).copyTo(dst);
  return dst;
}
}  // namespace

cv::Mat convolve_opencv(const cv::Mat& src, const ConvolveJob& job) {
  if (!job.keep_alpha || src.channels() != 4) return filter_all_channels(src, job);
  // --alpha keep: filter the colour channels, pass alpha through converted to the output depth.
  std::vector<cv::Mat> planes;
  cv::split(src, planes);
  cv::Mat colour;
  cv::merge(std::vector<cv::Mat>(planes.begin(), planes.begin() + 3), colour);
  std::vector<cv::Mat> out_planes;
  cv::split(filter_all_channels(colour, job), out_planes);
  out_planes.emplace_back();
  planes[3].convertTo(out_planes[3], job.output_depth);
  cv::Mat dst;
  cv::merge(out_planes, dst);
  return dst;
}

}  // namespace cuconv::detail
