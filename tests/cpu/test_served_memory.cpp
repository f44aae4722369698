// SPDX-License-Identifier: Apache-2.0
// A request never sees another's bytes: memory a decoder leaves unwritten reads as zeros, in a
// server (where the heap hands out what an earlier request used) as in a process of its own.
// The probe is a planar 16-bit RGB TIFF, of which OpenCV 4.6 fills only part (whether such a
// file is refused is another matter; here only: nothing of another request in what it gives).
#include "adversarial_files.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using cuconv::test::run_cuconv;
using cuconv::test::TempDir;
using cuconv::test::crafted::little_endian;

constexpr std::uint16_t kPlanarValue = 1000;  // every sample of the TIFF
constexpr std::uint16_t kSecret = 12345;      // every sample of the other request's image

/// An uncompressed little-endian 16-bit RGB TIFF, PlanarConfiguration 2 (one strip per plane),
/// every sample `value`.
std::string planar_rgb16_tiff(int width, int height, std::uint16_t value) {
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
  REQUIRE(file.size() == pixels_at);
  for (std::uint64_t i = 0; i < 3 * plane_bytes / 2; ++i) file += little_endian(value, 2);
  return file;
}

/// How many values of `image` cannot come from the probe file: all its samples are kPlanarValue,
/// unwritten ones read 0, and a blur keeps them in that range. AddressSanitizer's allocator
/// ignores M_PERTURB and fills new blocks with 0xBE bytes, so under it only the other image's
/// value counts.
int foreign_values(const cv::Mat& image) {
  int count = 0;
  const cv::Mat flat = image.reshape(1);
  for (int r = 0; r < flat.rows; ++r)
    for (int c = 0; c < flat.cols; ++c) {
      const std::uint16_t v = flat.at<std::uint16_t>(r, c);
#if defined(__SANITIZE_ADDRESS__)
      count += v == kSecret;
#else
      count += v > kPlanarValue;
#endif
    }
  return count;
}

/// The probe's size: its plane buffer (6438 bytes) comes from the heap, not from the small-block
/// cache or the stack.
constexpr int kWidth = 37, kHeight = 29;

}  // namespace

TEST_CASE("served memory: a decoder's unwritten samples never hold another request's image") {
  TempDir dir;
  const cuconv::test::Server server(dir);
  const std::string planar = dir.file("planar16.tif"), own = dir.file("own.tif");
  std::ofstream(planar, std::ios::binary) << planar_rgb16_tiff(kWidth, kHeight, kPlanarValue);
  REQUIRE(cv::imwrite(dir.file("secret.png"), cv::Mat(kHeight, kWidth, CV_16UC3, cv::Scalar::all(kSecret))));
  const auto in_process = run_cuconv({"--server", "never", planar, own, "-f", "gauss5"});
  // Several rounds: the heap need not hand the freed image to the very next request.
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    const std::string a = dir.file("a" + std::to_string(round) + ".png");
    const std::string b = dir.file("b" + std::to_string(round) + ".tif");
    const auto first =
        run_cuconv({"--server", "always", dir.file("secret.png"), a, "-f", "gauss5"}, "", server.setup());
    REQUIRE_MESSAGE(first.exit_code == 0, first.err);
    const auto second = run_cuconv({"--server", "always", planar, b, "-f", "gauss5"}, "", server.setup());
    INFO("served: ", second.err, "\nin-process: ", in_process.err);
    CHECK(second.exit_code == in_process.exit_code);
    if (second.exit_code != 0) continue;  // refused, as in-process: nothing to leak
    const cv::Mat output = cv::imread(b, cv::IMREAD_UNCHANGED);
    REQUIRE(output.type() == CV_16UC3);
    CHECK(foreign_values(output) == 0);
    CHECK(cuconv::test::read_file(b) == cuconv::test::read_file(own));
  }
}

TEST_CASE("served memory: an image read after another one's memory was freed holds none of its values") {
  TempDir dir;
  const std::string planar = dir.file("planar16.tif");
  std::ofstream(planar, std::ios::binary) << planar_rgb16_tiff(kWidth, kHeight, kPlanarValue);
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    {
      // Memory of the decoded image's size, filled and freed: the heap's next block of that size.
      const cv::Mat secret(kHeight, kWidth, CV_16UC3, cv::Scalar::all(kSecret));
    }
    cv::Mat image;
    try {
      image = cuconv::read_image(planar);
    } catch (const cuconv::Error&) {
      continue;  // refused: nothing to leak
    }
    REQUIRE(image.type() == CV_16UC3);
    CHECK(foreign_values(image) == 0);
  }
}
