// SPDX-License-Identifier: Apache-2.0
#pragma once
// JPEG files crafted for the GPU codec tests: OpenCV-encoded photos with EXIF, ICC and Adobe
// segments inserted, and the byte edits that make a file 12-bit, CMYK, arithmetic-coded,
// truncated or corrupt; and the bounds by file kind within which another decoder's pixels
// (nvJPEG's) must lie from libjpeg-turbo's.
#include "codec/jpeg_markers.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
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

/// A minimal EXIF APP1 (big-endian TIFF header, no entries): its bytes are copied, never interpreted.
inline Bytes exif_segment() { return app_segment(1, std::string("Exif\0\0MM\0\x2a\0\0\0\x08\0\0", 16)); }

/// The smallest profile whose header codec::icc_profile_defect accepts: `size` bytes (at least
/// 132: the 128-byte header and a tag count of 0), the size in its first field, "acsp" at 36.
inline std::string minimal_icc_profile(std::size_t size = 132) {
  std::string profile(size, '\0');
  for (int i = 0; i < 4; ++i) profile[static_cast<std::size_t>(i)] = static_cast<char>(size >> (24 - 8 * i));
  profile.replace(36, 4, "acsp");
  return profile;
}

/// APP2 chunk `number` of `count` holding `data` (ICC.1 Annex B.4).
inline Bytes icc_chunk(int number, int count, const std::string& data) {
  return app_segment(2, std::string("ICC_PROFILE\0", 12) + static_cast<char>(number) + static_cast<char>(count) + data);
}

/// A sound profile (minimal_icc_profile) in one APP2 chunk: copied into the output on both routes.
inline Bytes icc_segment() { return icc_chunk(1, 1, minimal_icc_profile()); }
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
    if (codec::is_start_of_frame(code)) return pos;
    pos += 2 + ((static_cast<std::size_t>(jpeg[pos + 2]) << 8) | jpeg[pos + 3]);
  }
  return 0;
}

/// How far pixels decoded by another JPEG decoder (nvJPEG) may lie from libjpeg-turbo's (OpenCV's)
/// for one kind of file: the largest absolute difference, the mean absolute difference over all
/// values, and the largest mean over one block of the MCU grid (block_w x block_h pixels, all
/// channels), which a wrong MCU row exceeds even where it moves the image's mean little.
/// docs/testing.md, "JPEG decoders", gives each bound's reason.
struct JpegBound {
  const char* kind;
  double max;
  double mean;
  double block_mean;
  int block_w;
  int block_h;
};

/// Decoded pixels (the photo at quality 90): nvJPEG upsamples chroma by replication where
/// libjpeg-turbo interpolates, and has the same integer IDCT, so 4:4:4 and gray differ by the
/// IDCT's rounding at most.
inline constexpr JpegBound kDecode420{"4:2:0", 24, 0.6, 5.0, 16, 16};
inline constexpr JpegBound kDecode422{"4:2:2", 16, 0.4, 4.0, 16, 8};
inline constexpr JpegBound kDecode444{"4:4:4", 4, 0.1, 2.0, 8, 8};
inline constexpr JpegBound kDecodeGray{"gray", 2, 0.05, 1.5, 8, 8};
/// `--codec gpu` against `--codec opencv`, read back: the decode above, gauss5, and two encoders
/// at quality 95 (4:2:0 for colour).
inline constexpr JpegBound kOutputColour{"gauss5, encoded 4:2:0 at quality 95", 24, 1.0, 4.0, 16, 16};
inline constexpr JpegBound kOutputGray{"gauss5, encoded gray at quality 95", 8, 0.4, 2.5, 8, 8};

struct JpegDifference {
  double max = 0;
  double mean = 0;
  double block_mean = 0;  ///< the largest mean over one block
  int block_x = 0;        ///< that block's top-left pixel
  int block_y = 0;
};

/// |got - want| of two 8-bit images of the same size and type: max, mean, and the worst block of
/// `block_w` x `block_h` pixels on the grid from (0, 0) (the MCU grid; edge blocks are partial).
inline JpegDifference jpeg_difference(const cv::Mat& got, const cv::Mat& want, int block_w, int block_h) {
  CV_Assert(got.size() == want.size() && got.type() == want.type() && got.depth() == CV_8U);
  cv::Mat diff;
  cv::absdiff(got, want, diff);
  const int channels = diff.channels();
  diff = diff.reshape(1, diff.rows);  // rows x (cols * channels) values
  JpegDifference d;
  cv::minMaxLoc(diff, nullptr, &d.max);
  d.mean = cv::mean(diff)[0];
  for (int y = 0; y < got.rows; y += block_h)
    for (int x = 0; x < got.cols; x += block_w) {
      const cv::Rect block(x * channels, y, std::min(block_w, got.cols - x) * channels, std::min(block_h, got.rows - y));
      const double m = cv::mean(diff(block))[0];
      if (m > d.block_mean) {
        d.block_mean = m;
        d.block_x = x;
        d.block_y = y;
      }
    }
  return d;
}

inline bool within(const JpegDifference& d, const JpegBound& b) {
  return d.max <= b.max && d.mean <= b.mean && d.block_mean <= b.block_mean;
}

/// "max M (bound), mean ..., worst WxH block at (x, y) ..." for test messages.
inline std::string describe(const JpegDifference& d, const JpegBound& b) {
  std::ostringstream out;
  out << b.kind << ": max abs diff " << d.max << " (bound " << b.max << "), mean " << d.mean << " (bound " << b.mean
      << "), worst " << b.block_w << "x" << b.block_h << " block mean " << d.block_mean << " at (" << d.block_x << ", "
      << d.block_y << ") (bound " << b.block_mean << ")";
  return out.str();
}

inline void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

}  // namespace cuconv::test
