// SPDX-License-Identifier: Apache-2.0
// JPEG written by libjpeg directly and OpenCV's codecs loaded only when needed
// (src/codec/jpeg_encode.hpp, src/codec/opencv_codecs.hpp): the bytes are OpenCV's, the engine
// binary does not link imgcodecs, and a JPEG-only run never loads it.
#include "test_support.hpp"

#include "codec/jpeg_encode.hpp"

#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <string>
#include <vector>

using cuconv::test::random_image;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

/// Smooth structure plus noise, as photos are: both kinds of block content reach the encoder.
cv::Mat photo_like(int rows, int cols, int channels, std::uint64_t seed) {
  cv::Mat small = random_image(rows / 8 + 2, cols / 8 + 2, CV_8U, channels, seed);
  cv::Mat image;
  cv::resize(small, image, cv::Size(cols, rows), 0, 0, cv::INTER_CUBIC);
  cv::Mat noise = random_image(rows, cols, CV_8U, channels, seed + 1);
  cv::addWeighted(image, 0.9, noise, 0.1, 0, image);
  return image;
}

/// What `command` prints on standard output.
std::string run_shell(const std::string& command) {
  std::string text;
  if (std::FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
    ::pclose(pipe);
  }
  return text;
}

/// How often `what` occurs in `text`.
std::size_t count_lines_with(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("jpeg encode: the same bytes as OpenCV's imencode for gray, BGR and BGRA at every tested size and quality") {
  int compared = 0;
  for (const int channels : {1, 3, 4}) {
    for (const auto& [size_rows, size_cols] : {std::pair{1, 1}, {7, 31}, {17, 9}, {64, 64}, {333, 517}}) {
      const int rows = size_rows;  // plain locals: clang-tidy 14 cannot see bindings in CAPTURE's lambda
      const int cols = size_cols;
      for (const int quality : {1, 50, 90, 95, 100}) {
        const cv::Mat image = (rows * cols) % 2 == 0 ? photo_like(rows, cols, channels, 11u + rows)
                                                     : random_image(rows, cols, CV_8U, channels, 13u + cols);
        CAPTURE(channels);
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(quality);
        std::vector<unsigned char> theirs;
        REQUIRE(cv::imencode(".jpg", image, theirs, {cv::IMWRITE_JPEG_QUALITY, quality}));
        const auto ours = cuconv::codec::encode_jpeg(image, quality);
        REQUIRE(ours.has_value());
        CHECK(*ours == theirs);
        ++compared;
      }
    }
  }
  CHECK(compared == 75);
  // Depths and channel counts it does not take are left to OpenCV.
  CHECK_FALSE(cuconv::codec::encode_jpeg(random_image(8, 8, CV_16U, 3, 1), 90).has_value());
  CHECK_FALSE(cuconv::codec::encode_jpeg(random_image(8, 8, CV_8U, 2, 1), 90).has_value());
}

TEST_CASE("codec loading: the engine links no imgcodecs, a JPEG run loads none of it, a PNG run loads it as a module") {
  // readelf's view of what the loader must map before main.
  const std::string needed = run_shell("readelf -d '" CUCONV_TEST_ENGINE "'");
  REQUIRE(needed.find("NEEDED") != std::string::npos);
  CHECK(needed.find("imgcodecs") == std::string::npos);
  // glibc's loader lists every object it maps with LD_DEBUG=files (its own switch, not cuconv's).
  TempDir dir;
  const auto run = [&](const std::string& input, const std::string& output) {
    const auto result =
        run_cuconv({"--server", "never", input, dir.file(output), "--filter", "gauss5", "--variant", "opencv"}, "",
                   "export LD_DEBUG=files");
    INFO(result.err.substr(0, 2000));
    REQUIRE(result.exit_code == 0);
    return result.err;
  };
  const std::string jpeg_input = dir.file("in.jpg");
  REQUIRE(cv::imwrite(jpeg_input, photo_like(120, 160, 3, 5)));
  const std::string jpeg_run = run(jpeg_input, "out.jpg");
  CHECK(count_lines_with(jpeg_run, "libopencv_core") > 0);  // the engine's trace reached us
  CHECK(count_lines_with(jpeg_run, "libopencv_imgcodecs") == 0);
  CHECK(count_lines_with(jpeg_run, "libcuconv-opencv-codecs") == 0);
  const std::string png_run = run(sample("camera.png"), "out.png");
  CHECK(count_lines_with(png_run, "libcuconv-opencv-codecs.so [0];  dynamically loaded") == 1);
  CHECK(count_lines_with(png_run, "libopencv_imgcodecs") > 0);
  // And the JPEG written is OpenCV's: filter2D's result through imencode, byte for byte.
  const cv::Mat input = cv::imread(jpeg_input, cv::IMREAD_UNCHANGED);
  cv::Mat expected;
  cv::filter2D(input, expected, -1, cuconv::test::kernel_matrix(cuconv::load_filter("gauss5")), cv::Point(-1, -1), 0,
               cv::BORDER_REFLECT_101);
  std::vector<unsigned char> expected_bytes;
  REQUIRE(cv::imencode(".jpg", expected, expected_bytes, {cv::IMWRITE_JPEG_QUALITY, 95}));
  const std::string written = cuconv::test::read_file(dir.file("out.jpg"));
  CHECK(written == std::string(expected_bytes.begin(), expected_bytes.end()));
}
