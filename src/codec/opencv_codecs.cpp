// SPDX-License-Identifier: Apache-2.0
// The codec calls on OpenCV's imgcodecs, linked (opencv_codecs.hpp). The module build adds the
// table the engine's loader asks for.
#include "codec/opencv_codecs.hpp"
#include "codec/zeroed_heap.hpp"

#include <opencv2/imgcodecs.hpp>

namespace cuconv::codec {

cv::Mat opencv_imread(const std::string& path, int flags) {
  const ZeroedHeapWhileDecoding zeroed;
  return cv::imread(path, flags);
}

cv::Mat opencv_imdecode(std::span<const unsigned char> bytes, int flags) {
  const cv::Mat wrapped(1, static_cast<int>(bytes.size()), CV_8U, const_cast<unsigned char*>(bytes.data()));
  const ZeroedHeapWhileDecoding zeroed;
  return cv::imdecode(wrapped, flags);
}

bool opencv_imencode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& encoded,
                     const std::vector<int>& params) {
  return cv::imencode(ext, image, encoded, params);
}

bool opencv_have_writer(const std::string& path) { return cv::haveImageWriter(path); }

}  // namespace cuconv::codec

#ifdef CUCONV_OPENCV_CODECS_MODULE
extern "C" __attribute__((visibility("default"))) const cuconv::codec::OpenCvCodecs* cuconv_opencv_codecs_v1() {
  static const cuconv::codec::OpenCvCodecs table{&cuconv::codec::opencv_imread, &cuconv::codec::opencv_imdecode,
                                                 &cuconv::codec::opencv_imencode, &cuconv::codec::opencv_have_writer};
  return &table;
}
#endif
