// SPDX-License-Identifier: Apache-2.0
// The codec calls on OpenCV's imgcodecs, linked (opencv_codecs.hpp). The module build adds the
// table the engine's loader asks for.
#include "codec/opencv_codecs.hpp"

#include <opencv2/imgcodecs.hpp>

#include <malloc.h>

#include <mutex>

namespace cuconv::codec {

namespace {

/// While any thread decodes, the heap hands out zeroed memory (glibc's M_PERTURB with 0xFF: new
/// blocks are filled with 0x00, freed ones with 0xFF). OpenCV's decoders may leave part of their
/// buffers and images unwritten (OpenCV 4.6 reads one plane of a planar 16-bit RGB TIFF into a
/// buffer sized for three; cuconv reads TIFF with libtiff since, tiff_codec.hpp, but other
/// decoders may do the same), and the heap reuses memory an earlier image held: in a server,
/// another request's. Not reached: blocks of up to 1032 bytes that glibc's per-thread cache hands
/// back as they were, buffers a decoder keeps on its stack (cv::AutoBuffer, up to 1 KB), and
/// other allocators (AddressSanitizer's ignores M_PERTURB).
class ZeroedHeapWhileDecoding {
 public:
  ZeroedHeapWhileDecoding() {
    const std::lock_guard lock(mutex_);
    if (decoders_++ == 0) ::mallopt(M_PERTURB, 0xFF);
  }
  ~ZeroedHeapWhileDecoding() {
    const std::lock_guard lock(mutex_);
    if (--decoders_ == 0) ::mallopt(M_PERTURB, 0);
  }
  ZeroedHeapWhileDecoding(const ZeroedHeapWhileDecoding&) = delete;
  ZeroedHeapWhileDecoding& operator=(const ZeroedHeapWhileDecoding&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int decoders_ = 0;
};

}  // namespace

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
