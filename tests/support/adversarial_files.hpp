// SPDX-License-Identifier: Apache-2.0
#pragma once
// The crafted files of the adversarial pass (issue 48), made in code: tests/cpu/test_adversarial_*.cpp
// and the bad-input matrix write them, and tests/fuzz/corpus_images/ holds the same bytes as seeds
// for the image fuzzers (a test keeps the folder in step).
#include "test_support.hpp"

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuconv::test::crafted {

inline std::string little_endian(std::uint64_t value, int count) {
  std::string bytes;
  for (int i = 0; i < count; ++i) bytes += static_cast<char>(value >> (8 * i));
  return bytes;
}
inline std::string big_endian(std::uint64_t value, int count) {
  std::string bytes;
  for (int i = count - 1; i >= 0; --i) bytes += static_cast<char>(value >> (8 * i));
  return bytes;
}

/// An uncompressed 8-bit little-endian TIFF of `width` x `height` pixels with `samples` samples
/// per pixel: gray (or RGB from 3 samples), the samples past the colour ones unspecified extra
/// samples (TIFF 6.0 ExtraSamples = 0): 2 samples is gray plus an extra one, which a decoder may
/// read as gray and so drop a channel without a word.
inline std::string tiff_with_samples(int width, int height, int samples) {
  const int colour = samples >= 3 ? 3 : 1;
  const int extra = samples - colour;
  struct Entry {
    int tag, type;
    std::uint64_t count;
    std::string value;  // 4 bytes: inline or an offset
  };
  constexpr int kShort = 3, kLong = 4;
  const std::uint64_t pixel_bytes = static_cast<std::uint64_t>(width) * height * samples;
  // Layout: header (8), directory at 8, then BitsPerSample values, ExtraSamples values, pixels.
  std::vector<Entry> entries;
  const int entry_count = 10 + (extra > 0 ? 1 : 0);
  const std::uint64_t after_directory = 8 + 2 + 12 * entry_count + 4;
  const std::uint64_t bits_at = after_directory;
  const std::uint64_t extra_at = bits_at + std::uint64_t{2} * samples;
  const std::uint64_t pixels_at = extra_at + std::uint64_t{2} * std::max(extra, 1);
  const auto inline_short = [](std::uint64_t v) { return little_endian(v, 2) + little_endian(0, 2); };
  entries.push_back({256, kLong, 1, little_endian(width, 4)});
  entries.push_back({257, kLong, 1, little_endian(height, 4)});
  entries.push_back(
      {258, kShort, static_cast<std::uint64_t>(samples),
       samples <= 2 ? little_endian(8, 2) + little_endian(samples == 2 ? 8 : 0, 2) : little_endian(bits_at, 4)});
  entries.push_back({259, kShort, 1, inline_short(1)});                    // no compression
  entries.push_back({262, kShort, 1, inline_short(colour == 3 ? 2 : 1)});  // RGB or BlackIsZero
  entries.push_back({273, kLong, 1, little_endian(pixels_at, 4)});         // StripOffsets
  entries.push_back({277, kShort, 1, inline_short(static_cast<std::uint64_t>(samples))});
  entries.push_back({278, kLong, 1, little_endian(height, 4)});       // RowsPerStrip
  entries.push_back({279, kLong, 1, little_endian(pixel_bytes, 4)});  // StripByteCounts
  entries.push_back({284, kShort, 1, inline_short(1)});               // chunky
  if (extra > 0)
    entries.push_back({338, kShort, static_cast<std::uint64_t>(extra),
                       extra <= 2 ? std::string(4, '\0') : little_endian(extra_at, 4)});
  REQUIRE(entries.size() == static_cast<std::size_t>(entry_count));
  std::string file = "II" + little_endian(42, 2) + little_endian(8, 4) + little_endian(entry_count, 2);
  for (const Entry& e : entries)
    file += little_endian(e.tag, 2) + little_endian(e.type, 2) + little_endian(e.count, 4) + e.value;
  file += little_endian(0, 4);
  for (int s = 0; s < samples; ++s) file += little_endian(8, 2);
  file += std::string(2 * static_cast<std::size_t>(std::max(extra, 1)), '\0');
  REQUIRE(file.size() == pixels_at);
  for (std::uint64_t i = 0; i < pixel_bytes; ++i) file += static_cast<char>(i * 37 % 251);
  return file;
}

/// `file`'s classic little-endian TIFF directory entry `tag`: its element `index` set to `value`
/// (SHORT or LONG, inline or at its offset).
inline void patch_tiff_entry(std::string& file, int tag, int index, std::uint32_t value) {
  const auto number = [&file](std::size_t at, int count) {
    std::uint64_t v = 0;
    for (int i = count - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(file[at + i]);
    return v;
  };
  const std::size_t directory = number(4, 4);
  const std::uint64_t entries = number(directory, 2);
  for (std::uint64_t e = 0; e < entries; ++e) {
    const std::size_t at = directory + 2 + 12 * e;
    if (static_cast<int>(number(at, 2)) != tag) continue;
    const int size = number(at + 2, 2) == 3 ? 2 : 4;
    const std::uint64_t count = number(at + 4, 4);
    REQUIRE(static_cast<std::uint64_t>(index) < count);
    const std::size_t values = count * size <= 4 ? at + 8 : number(at + 8, 4);
    file.replace(values + static_cast<std::size_t>(index) * size, size, little_endian(value, size));
    return;
  }
  FAIL("no tag ", tag, " in the TIFF directory");
}

/// An uncompressed little-endian 16-bit RGB TIFF, PlanarConfiguration 2 (one strip per plane),
/// every sample `value`: OpenCV 4.6 decoded one plane of it and left the others as the heap held
/// them.
inline std::string planar_rgb16_tiff(int width, int height, std::uint16_t value) {
  constexpr int kShort = 3, kLong = 4, kEntries = 10;
  const std::uint64_t plane_bytes = 2ull * static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height);
  // Layout: header (8), directory, then BitsPerSample, StripOffsets, StripByteCounts, the planes.
  const std::uint64_t bits_at = 8 + 2 + 12 * kEntries + 4;
  const std::uint64_t offsets_at = bits_at + 6;
  const std::uint64_t counts_at = offsets_at + 12;
  const std::uint64_t pixels_at = counts_at + 12;
  const auto entry = [](int tag, int type, std::uint64_t count, const std::string& value4) {
    return little_endian(tag, 2) + little_endian(type, 2) + little_endian(count, 4) + value4;
  };
  const auto inline_short = [](std::uint64_t v) { return little_endian(v, 2) + little_endian(0, 2); };
  std::string file = "II" + little_endian(42, 2) + little_endian(8, 4) + little_endian(kEntries, 2);
  file += entry(256, kLong, 1, little_endian(width, 4));
  file += entry(257, kLong, 1, little_endian(height, 4));
  file += entry(258, kShort, 3, little_endian(bits_at, 4));
  file += entry(259, kShort, 1, inline_short(1));  // no compression
  file += entry(262, kShort, 1, inline_short(2));  // RGB
  file += entry(273, kLong, 3, little_endian(offsets_at, 4));
  file += entry(277, kShort, 1, inline_short(3));  // samples per pixel
  file += entry(278, kLong, 1, little_endian(height, 4));
  file += entry(279, kLong, 3, little_endian(counts_at, 4));
  file += entry(284, kShort, 1, inline_short(2));  // planar
  file += little_endian(0, 4);
  for (int s = 0; s < 3; ++s) file += little_endian(16, 2);
  for (int s = 0; s < 3; ++s) file += little_endian(pixels_at + s * plane_bytes, 4);
  for (int s = 0; s < 3; ++s) file += little_endian(plane_bytes, 4);
  for (std::uint64_t i = 0; i < 3 * plane_bytes / 2; ++i) file += little_endian(value, 2);
  return file;
}

/// An EXIF block (what a JPEG's APP1 holds after "Exif\0\0"): one IFD with Orientation.
inline std::string exif_with_orientation(int orientation) {
  return "II" + little_endian(42, 2) + little_endian(8, 4) + little_endian(1, 2) +  // one entry
         little_endian(0x0112, 2) + little_endian(3, 2) + little_endian(1, 4) + little_endian(orientation, 2) +
         little_endian(0, 2) + little_endian(0, 4);
}

/// A JPEG segment: marker, length (counting itself), body.
inline std::string jpeg_segment(int marker, const std::string& body) {
  return std::string{'\xFF', static_cast<char>(marker)} + big_endian(body.size() + 2, 2) + body;
}

/// A JPEG of `image` with an EXIF saying Orientation 6 and, after it, an ICC profile whose
/// header is garbage (its size field says 0x41414141 bytes, no "acsp").
inline std::string jpeg_good_exif_bad_icc(const cv::Mat& image) {
  std::vector<unsigned char> encoded;
  REQUIRE(cv::imencode(".jpg", image, encoded));
  const std::string jpeg(encoded.begin(), encoded.end());
  const std::string exif = jpeg_segment(0xE1, std::string("Exif\0\0", 6) + exif_with_orientation(6));
  const std::string icc = jpeg_segment(0xE2, std::string("ICC_PROFILE\0", 12) + "\x01\x01" + std::string(200, 'A'));
  return jpeg.substr(0, 2) + exif + icc + jpeg.substr(2);
}

/// An uncompressed-ish PNG of `side` x `side` gray pixels (all one value), built with OpenCV.
inline std::string big_gray_png(int side) {
  std::vector<unsigned char> encoded;
  REQUIRE(cv::imencode(".png", cv::Mat(side, side, CV_8UC1, cv::Scalar(90)), encoded));
  return {encoded.begin(), encoded.end()};
}

/// Every crafted file of the pass by name: what the tests below write and what the fuzzers'
/// seed folder holds.
inline std::map<std::string, std::string> adversarial_seeds() {
  const cv::Mat small = cuconv::test::random_image(24, 32, CV_8U, 3, 48);
  std::map<std::string, std::string> seeds;
  seeds["tiff-gray-extra-2-channels.tif"] = tiff_with_samples(6, 4, 2);
  seeds["tiff-rgba-extra-5-channels.tif"] = tiff_with_samples(6, 4, 5);
  seeds["tiff-gray-1-channel.tif"] = tiff_with_samples(6, 4, 1);
  seeds["jpeg-good-exif-bad-icc.jpg"] = jpeg_good_exif_bad_icc(small);
  seeds["scale-1e-320.mat"] = "3 3 1e-320\n1 1 1\n1 1 1\n1 1 1\n";
  seeds["scale-1e-40.mat"] = "3 3 1e-40\n1 1 1\n1 1 1\n1 1 1\n";
  seeds["offset-1e39.mat"] = "1 1 1 1e39\n1\n";
  seeds["weight-1e39.txt"] = "1 1e39 1\n";
  seeds["from-list-with-nul.txt"] = std::string("d/one.png\0d/two.png\n", 20);
  return seeds;
}

}  // namespace cuconv::test::crafted
