// SPDX-License-Identifier: Apache-2.0
// Whole images or none (issue 62), past the decoders: a decode whose result is smaller than its
// file's header claims is refused, and image bytes held in memory (the GPU route's file named .jpg
// that is no JPEG stream) go to the host reader a file of their format gets, libtiff for TIFF.
#include "adversarial_files.hpp"
#include "test_support.hpp"

#include "codec/image_header.hpp"
#include "codec/memory_image.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

using cuconv::ErrorKind;
using cuconv::codec::check_decoded_size;
using cuconv::codec::decode_image_bytes;
using cuconv::test::crafted::patch_tiff_entry;
using cuconv::test::crafted::planar_rgb16_tiff;

constexpr int kWidth = 37, kHeight = 29;
constexpr std::uint16_t kValue = 1000;

/// The ErrorKind that `call` throws, nullopt when it returns; its message into `message`.
template <typename Call>
std::optional<ErrorKind> thrown(Call&& call, std::string* message = nullptr) {
  try {
    call();
  } catch (const cuconv::Error& e) {
    INFO(e.what());
    if (message != nullptr) *message = e.what();
    return e.kind();
  }
  return std::nullopt;
}

std::span<const unsigned char> bytes_of(const std::string& file) {
  return {reinterpret_cast<const unsigned char*>(file.data()), file.size()};
}

}  // namespace

// No decoder cuconv uses is known to return a smaller image without an error (libtiff, libjpeg
// and libpng refuse data that runs out, which the header walks also find; OpenCV 4.6's BMP
// decoder fills what RLE escapes skip), so the check read_image makes after every decode is
// tested here through its function.
TEST_CASE("whole images: a decoded image with fewer rows, columns or colour channels than its header is refused") {
  cuconv::codec::ImageHeader header;
  header.format = "TIFF";
  header.has_size = true;
  header.width = kWidth;
  header.height = kHeight;
  header.channels = 3;
  const auto check = [&](int rows, int cols, int channels) {
    return thrown([&] { check_decoded_size("in.tif", header, rows, cols, channels); });
  };
  CHECK(check(kHeight, kWidth, 3) == std::nullopt);
  CHECK(check(kWidth, kHeight, 3) == std::nullopt);  // turned by an Orientation tag
  CHECK(check(kHeight - 1, kWidth, 3) == ErrorKind::bad_input);
  CHECK(check(kHeight, kWidth - 1, 3) == ErrorKind::bad_input);
  CHECK(check(kHeight, kWidth, 1) == ErrorKind::bad_input);  // gray from RGB samples
  header.channels = 4;                                       // CMYK: decoders give 3 colour channels
  CHECK(check(kHeight, kWidth, 3) == std::nullopt);
  header.channels = 1;  // a palette becomes colour
  CHECK(check(kHeight, kWidth, 3) == std::nullopt);
  header.has_size = false;  // the header gave no size: nothing to compare
  CHECK(check(1, 1, 1) == std::nullopt);
  header.has_size = true;
  std::string message;
  CHECK(thrown([&] { check_decoded_size("in.tif", header, kHeight - 1, kWidth, 3); }, &message) ==
        ErrorKind::bad_input);
  CHECK(message == "in.tif: cannot decode image: the decoder returned 37x28 pixels, but the TIFF header claims 37x29");
}

TEST_CASE("whole images: a planar 16-bit TIFF in memory keeps all three planes, other bytes go to OpenCV") {
  const std::string planar = planar_rgb16_tiff(kWidth, kHeight, kValue);
  const cv::Mat image = decode_image_bytes("", bytes_of(planar));
  REQUIRE(image.type() == CV_16UC3);
  REQUIRE(image.size() == cv::Size(kWidth, kHeight));
  CHECK(cv::countNonZero(image.reshape(1) != kValue) == 0);
  CHECK(cuconv::codec::is_tiff(bytes_of(planar)));

  std::vector<unsigned char> png;
  const cv::Mat gray(kHeight, kWidth, CV_8U, cv::Scalar(7));
  REQUIRE(cv::imencode(".png", gray, png));
  CHECK_FALSE(cuconv::codec::is_tiff(png));
  const cv::Mat from_png = decode_image_bytes("", png);
  CHECK(from_png.type() == CV_8UC1);
  CHECK(cv::countNonZero(from_png != 7) == 0);
}

TEST_CASE("whole images: TIFF bytes in memory with a short strip are refused, named as the caller says") {
  std::string planar = planar_rgb16_tiff(kWidth, kHeight, kValue);
  planar.resize(planar.size() - 100);  // the last plane's strip ends early
  std::string message;
  CHECK(thrown([&] { static_cast<void>(decode_image_bytes("", bytes_of(planar))); }, &message) == ErrorKind::bad_input);
  CHECK(message.starts_with("cannot decode image: truncated or corrupt TIFF file"));
  // The StripByteCounts of 10 (1073 needed): OpenCV decodes it, libtiff refuses it.
  std::string short_strip = cuconv::test::crafted::tiff_with_samples(kWidth, kHeight, 1);
  patch_tiff_entry(short_strip, 279, 0, 10);
  CHECK_FALSE(
      cv::imdecode(std::vector<unsigned char>(short_strip.begin(), short_strip.end()), cv::IMREAD_UNCHANGED).empty());
  CHECK(thrown([&] { static_cast<void>(decode_image_bytes("", bytes_of(short_strip))); }, &message) ==
        ErrorKind::bad_input);
  CHECK(message.find("StripByteCounts") != std::string::npos);
  const std::string not_an_image = "no image at all";
  CHECK(thrown([&] { static_cast<void>(decode_image_bytes("in.jpg", bytes_of(not_an_image))); }, &message) ==
        ErrorKind::bad_input);
  CHECK(message.starts_with("in.jpg: cannot decode image"));
}
