// SPDX-License-Identifier: Apache-2.0
#pragma once
// The guarantee that memory a decoder leaves unwritten reads as zeros, never as bytes an earlier
// image (in a server: another request's) left in the heap. opencv_codecs.cpp holds one around
// every OpenCV decode; test_served_memory.cpp checks the guarantee itself.
#include <malloc.h>

#include <mutex>

namespace cuconv::codec {

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

}  // namespace cuconv::codec
