// SPDX-License-Identifier: Apache-2.0
// The codec calls on OpenCV's imgcodecs, linked (opencv_codecs.hpp). The module build adds the
// table the engine's loader asks for.
#include "codec/opencv_codecs.hpp"

#include <opencv2/imgcodecs.hpp>

#include <cstring>

namespace cuconv::detail {

namespace {

thread_local bool t_decoding = false;

/// OpenCV's default allocator, except that an image allocated on a thread while it decodes
/// starts zeroed. A decoder may leave part of its image unwritten (OpenCV 4.6 fills a third of a
/// planar 16-bit RGB TIFF), and the heap hands out memory an earlier image used: in a server,
/// another request's. Zeroed, the unwritten part reads 0 in a server as in a process of its own.
class ZeroedDecodeAllocator final : public cv::MatAllocator {
 public:
  explicit ZeroedDecodeAllocator(cv::MatAllocator* next) : next_(next) {}
  cv::UMatData* allocate(int dims, const int* sizes, int type, void* data, size_t* step, cv::AccessFlag flags,
                         cv::UMatUsageFlags usage) const override {
    cv::UMatData* u = next_->allocate(dims, sizes, type, data, step, flags, usage);
    if (t_decoding && data == nullptr && u != nullptr && u->data != nullptr) std::memset(u->data, 0, u->size);
    return u;
  }
  bool allocate(cv::UMatData* u, cv::AccessFlag flags, cv::UMatUsageFlags usage) const override {
    return next_->allocate(u, flags, usage);
  }
  void deallocate(cv::UMatData* u) const override { next_->deallocate(u); }

 private:
  cv::MatAllocator* next_;
};

/// Marks this thread as decoding for its lifetime; the allocator is installed on first use
/// (never removed: images allocated through it may outlive any one decode).
class ZeroedDecode {
 public:
  ZeroedDecode() {
    static const bool installed = [] {
      cv::Mat::setDefaultAllocator(new ZeroedDecodeAllocator(cv::Mat::getDefaultAllocator()));
      return true;
    }();
    static_cast<void>(installed);
    t_decoding = true;
  }
  ~ZeroedDecode() { t_decoding = false; }
  ZeroedDecode(const ZeroedDecode&) = delete;
  ZeroedDecode& operator=(const ZeroedDecode&) = delete;
};

}  // namespace

cv::Mat opencv_imread(const std::string& path, int flags) {
  const ZeroedDecode zeroed;
  return cv::imread(path, flags);
}

cv::Mat opencv_imdecode(std::span<const unsigned char> bytes, int flags) {
  const cv::Mat wrapped(1, static_cast<int>(bytes.size()), CV_8U, const_cast<unsigned char*>(bytes.data()));
  const ZeroedDecode zeroed;
  return cv::imdecode(wrapped, flags);
}

bool opencv_imencode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& encoded,
                     const std::vector<int>& params) {
  return cv::imencode(ext, image, encoded, params);
}

bool opencv_have_writer(const std::string& path) { return cv::haveImageWriter(path); }

}  // namespace cuconv::detail

#ifdef CUCONV_OPENCV_CODECS_MODULE
extern "C" __attribute__((visibility("default"))) const cuconv::detail::OpenCvCodecs* cuconv_opencv_codecs_v1() {
  static const cuconv::detail::OpenCvCodecs table{&cuconv::detail::opencv_imread, &cuconv::detail::opencv_imdecode,
                                                  &cuconv::detail::opencv_imencode, &cuconv::detail::opencv_have_writer};
  return &table;
}
#endif
