// SPDX-License-Identifier: Apache-2.0
#pragma once
// JPEG files crafted for the GPU codec tests: OpenCV-encoded photos with EXIF, ICC and Adobe
// segments inserted, and the byte edits that make a file 12-bit, CMYK, arithmetic-coded,
// truncated or corrupt; and the bounds by file kind within which another decoder's pixels
// (nvJPEG's) must lie from libjpeg-turbo's.
#include "codec/jpeg_markers.hpp"
#include "test_support.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

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
  cv::imencode(".jpg", image, out,
               {cv::IMWRITE_JPEG_QUALITY, quality, cv::IMWRITE_JPEG_PROGRESSIVE, progressive ? 1 : 0});
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
/// values, the largest mean over one block of the MCU grid (block_w x block_h pixels, all
/// channels), which a wrong MCU row exceeds even where it moves the image's mean little, and the
/// largest mean of the luma difference over one 8x8 block (one DCT block): chroma upsampling
/// leaves luma nearly alone, so a single block or MCU decoded a little wrong exceeds it.
/// docs/testing.md, "JPEG decoders", gives each bound's reason and the photos it was measured on.
struct JpegBound {
  const char* kind;
  double max;
  double mean;
  double block_mean;
  int block_w;
  int block_h;
  double block8_mean;
};

/// Decoded pixels (bound_photos at quality 90): nvJPEG upsamples chroma by replication where
/// libjpeg-turbo interpolates, and has the same integer IDCT, so 4:4:4 and gray differ by the
/// IDCT's rounding at most. Each is about 1.4x the largest the decoder emulation reaches over
/// bound_photos ("jpeg bounds" in tests/cpu/test_jpeg_codec.cpp prints them; docs/testing.md lists
/// them), and the luma bound lies below a block off by 20 and an MCU off by 5.
inline constexpr JpegBound kDecode420{"4:2:0", 48, 1.2, 7.0, 16, 16, 2.0};
inline constexpr JpegBound kDecode422{"4:2:2", 36, 0.9, 7.0, 16, 8, 2.0};
inline constexpr JpegBound kDecode444{"4:4:4", 4, 0.1, 2.0, 8, 8, 1.5};
inline constexpr JpegBound kDecodeGray{"gray", 2, 0.05, 1.5, 8, 8, 1.5};
/// `--codec gpu` against `--codec opencv`, read back: the decode above, gauss5, and two encoders
/// at quality 95 (4:2:0 for colour).
inline constexpr JpegBound kOutputColour{"gauss5, encoded 4:2:0 at quality 95", 24, 1.0, 4.0, 16, 16, 4.0};
inline constexpr JpegBound kOutputGray{"gauss5, encoded gray at quality 95", 8, 0.4, 2.5, 8, 8, 2.5};

/// One photo the bounds are measured on.
struct Photo {
  std::string name;
  cv::Mat image;  ///< 8-bit BGR, or gray
};

/// The photos every JPEG bound is derived from and checked on: the sample photos (chelsea,
/// astronaut, coffee; camera for gray) and two derived as cuconv_make_corpus derives its corpus
/// (a crop, a flip, a resize, noise of sigma 2), so each kind has at least five. `gray`: each as
/// one channel (camera instead of the second derived one).
inline std::vector<Photo> bound_photos(bool gray) {
  const auto colour = [](const char* name) { return cv::imread(sample(name), cv::IMREAD_COLOR); };
  const auto derived = [](const cv::Mat& source, cv::Rect crop, int flip, cv::Size size, std::uint64_t seed) {
    cv::Mat image;
    cv::flip(source(crop), image, flip);
    cv::resize(image, image, size, 0, 0, cv::INTER_LINEAR);
    cv::Mat noise(image.size(), CV_16SC3);
    cv::RNG(seed).fill(noise, cv::RNG::NORMAL, 0, 2);
    cv::Mat noisy;
    cv::add(image, noise, noisy, cv::noArray(), CV_8U);
    return noisy;
  };
  const cv::Mat astronaut = colour("astronaut.png");
  const cv::Mat coffee = colour("coffee.png");
  std::vector<Photo> photos{{"chelsea", colour("chelsea.png")},
                            {"astronaut", astronaut},
                            {"coffee", coffee},
                            {"astronaut crop", derived(astronaut, {40, 60, 400, 360}, 1, {523, 467}, 7)},
                            {"coffee crop", derived(coffee, {90, 30, 420, 350}, 0, {389, 331}, 11)}};
  if (!gray) return photos;
  photos.back() = {"camera", cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE)};
  for (std::size_t i = 0; i + 1 < photos.size(); ++i)
    cv::cvtColor(photos[i].image, photos[i].image, cv::COLOR_BGR2GRAY);
  return photos;
}

struct JpegDifference {
  double max = 0;
  double mean = 0;
  double block_mean = 0;  ///< the largest mean over one MCU block
  int block_x = 0;        ///< that block's top-left pixel
  int block_y = 0;
  double block8_mean = 0;  ///< the largest mean of the luma difference over one 8x8 block
  int block8_x = 0;
  int block8_y = 0;
};

/// The largest mean of `diff` (rows x (cols * channels) values) over one block of `block_w` x
/// `block_h` pixels on the grid from (0, 0) (edge blocks are partial), and its top-left pixel.
inline double worst_block(const cv::Mat& diff, int channels, int block_w, int block_h, int& at_x, int& at_y) {
  const int cols = diff.cols / channels;
  double worst = 0;
  for (int y = 0; y < diff.rows; y += block_h)
    for (int x = 0; x < cols; x += block_w) {
      const cv::Rect block(x * channels, y, std::min(block_w, cols - x) * channels, std::min(block_h, diff.rows - y));
      const double m = cv::mean(diff(block))[0];
      if (m > worst) {
        worst = m;
        at_x = x;
        at_y = y;
      }
    }
  return worst;
}

/// Luma (JFIF's Y = 0.299 R + 0.587 G + 0.114 B, unrounded) of an 8-bit BGR or gray image, CV_32F.
inline cv::Mat luma(const cv::Mat& image) {
  cv::Mat y;
  if (image.channels() == 1)
    image.convertTo(y, CV_32F);
  else
    cv::transform(image, y, cv::Matx13f(0.114F, 0.587F, 0.299F));
  if (y.depth() != CV_32F) y.convertTo(y, CV_32F);
  return y;
}

/// |got - want| of two 8-bit images of the same size and type: max, mean, the worst block of
/// `block_w` x `block_h` pixels on the grid from (0, 0) (the MCU grid) and the worst 8x8 block of
/// the luma difference. Chroma upsampling moves R, G and B so that luma stays (its weights
/// cancel the chroma terms up to rounding and clipping), so luma is where a block decoded wrong
/// stands out from the decoders' honest differences.
inline JpegDifference jpeg_difference(const cv::Mat& got, const cv::Mat& want, int block_w, int block_h) {
  CV_Assert(got.size() == want.size() && got.type() == want.type() && got.depth() == CV_8U);
  cv::Mat diff;
  cv::absdiff(got, want, diff);
  const int channels = diff.channels();
  diff = diff.reshape(1, diff.rows);  // rows x (cols * channels) values
  JpegDifference d;
  cv::minMaxLoc(diff, nullptr, &d.max);
  d.mean = cv::mean(diff)[0];
  d.block_mean = worst_block(diff, channels, block_w, block_h, d.block_x, d.block_y);
  cv::Mat luma_diff;
  cv::absdiff(luma(got), luma(want), luma_diff);
  d.block8_mean = worst_block(luma_diff, 1, 8, 8, d.block8_x, d.block8_y);
  return d;
}

inline bool within(const JpegDifference& d, const JpegBound& b) {
  return d.max <= b.max && d.mean <= b.mean && d.block_mean <= b.block_mean && d.block8_mean <= b.block8_mean;
}

/// The largest of each number over several differences (a kind's measured maxima; a block's
/// place is the worst one's).
inline void take_worst(JpegDifference& worst, const JpegDifference& d) {
  worst.max = std::max(worst.max, d.max);
  worst.mean = std::max(worst.mean, d.mean);
  if (d.block_mean > worst.block_mean) {
    worst.block_mean = d.block_mean;
    worst.block_x = d.block_x;
    worst.block_y = d.block_y;
  }
  if (d.block8_mean > worst.block8_mean) {
    worst.block8_mean = d.block8_mean;
    worst.block8_x = d.block8_x;
    worst.block8_y = d.block8_y;
  }
}

/// "max M (bound), mean ..., worst WxH block at (x, y) ..., worst 8x8 block ..." for test messages.
inline std::string describe(const JpegDifference& d, const JpegBound& b) {
  std::ostringstream out;
  out << b.kind << ": max abs diff " << d.max << " (bound " << b.max << "), mean " << d.mean << " (bound " << b.mean
      << "), worst " << b.block_w << "x" << b.block_h << " block mean " << d.block_mean << " at (" << d.block_x << ", "
      << d.block_y << ") (bound " << b.block_mean << "), worst 8x8 block luma mean " << d.block8_mean << " at ("
      << d.block8_x << ", " << d.block8_y << ") (bound " << b.block8_mean << ")";
  return out.str();
}

/// `image` with every value in `area` off by `by` (down where up would pass 255): a block or an
/// MCU decoded wrong, planted to show a bound fails it.
inline cv::Mat planted(const cv::Mat& image, cv::Rect area, int by) {
  cv::Mat out = image.clone();
  area &= cv::Rect(0, 0, image.cols, image.rows);
  for (int y = area.y; y < area.y + area.height; ++y) {
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    for (int i = area.x * image.channels(); i < (area.x + area.width) * image.channels(); ++i)
      row[i] = static_cast<std::uint8_t>(row[i] + by <= 255 ? row[i] + by : row[i] - by);
  }
  return out;
}

inline void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace cuconv::test
