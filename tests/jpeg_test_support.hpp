// SPDX-License-Identifier: Apache-2.0
#pragma once
// JPEG files crafted for the GPU codec tests: OpenCV-encoded photos with EXIF, ICC and Adobe
// segments inserted, and the byte edits that make a file 12-bit, CMYK, arithmetic-coded,
// truncated or corrupt.
#include "codec/jpeg_markers.hpp"

#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace cuconv::test {

using Bytes = std::vector<std::uint8_t>;

/// `image` as a JPEG from OpenCV (4:2:0 for colour, as imwrite writes it).
inline Bytes encode_jpeg(const cv::Mat& image, int quality = 90, bool progressive = false) {
  Bytes out;
  cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, quality, cv::IMWRITE_JPEG_PROGRESSIVE, progressive ? 1 : 0});
  return out;
}

/// An APPn segment (marker, length, payload).
inline Bytes app_segment(int n, const std::string& payload) {
  const std::size_t length = payload.size() + 2;
  Bytes s{0xFF, static_cast<std::uint8_t>(0xE0 + n), static_cast<std::uint8_t>(length >> 8),
          static_cast<std::uint8_t>(length & 0xFF)};
  for (const char c : payload) s.push_back(static_cast<std::uint8_t>(c));
  return s;
}

/// A minimal EXIF APP1 (big-endian TIFF header, no entries) and an ICC APP2 chunk with a fake
/// profile: their bytes are copied, never interpreted.
inline Bytes exif_segment() { return app_segment(1, std::string("Exif\0\0MM\0\x2a\0\0\0\x08\0\0", 16)); }
inline Bytes icc_segment() { return app_segment(2, std::string("ICC_PROFILE\0\x01\x01", 14) + "not-a-real-profile"); }
/// Adobe APP14 with colour transform `transform` (0: RGB or CMYK coded, 1: YCbCr, 2: YCCK).
inline Bytes adobe_segment(int transform) {
  return app_segment(14, std::string("Adobe\0\x64\0\0\0\0", 11) + static_cast<char>(transform));
}

/// `jpeg` with `segments` inserted right after SOI.
inline Bytes with_segments(const Bytes& jpeg, const std::vector<Bytes>& segments) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);
  for (const Bytes& s : segments) out.insert(out.end(), s.begin(), s.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

/// Offset of the first SOFn marker's 0xFF in `jpeg` (walks the segments).
inline std::size_t frame_offset(const Bytes& jpeg) {
  std::size_t pos = 2;
  while (pos + 4 <= jpeg.size()) {
    const int code = jpeg[pos + 1];
    if (code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC) return pos;
    pos += 2 + ((static_cast<std::size_t>(jpeg[pos + 2]) << 8) | jpeg[pos + 3]);
  }
  return 0;
}

inline void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

}  // namespace cuconv::test
