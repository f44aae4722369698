// SPDX-License-Identifier: Apache-2.0
// Output formats keep the pixels written, or refuse before any work: lossless TIFF at every depth
// and channel count, PNM's and PBM's limits, and each claimed format read back and run end to end.
#include "formats_support.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

using namespace cuconv;
using namespace cuconv::test;
namespace fs = std::filesystem;

TEST_CASE("TIFF output round-trips bit for bit: 1, 3 and 4 channels of 8U, 16U and 32F, every compression") {
  // Before issue 23 OpenCV wrote 3-channel float with SGILOG (LogLuv): up to 2% off, and
  // negative values wrong.
  TempDir dir;
  for (const std::string compression : {"", "none", "lzw", "deflate"}) {
    for (const int depth : {CV_8U, CV_16U, CV_32F}) {
      for (const int channels : {1, 3, 4}) {
        const cv::Mat image =
            depth == CV_32F ? awkward_float_image(channels) : random_image(41, 33, depth, channels, 7);
        const std::string path =
            dir.file("out-" + compression + "-" + depth_name(depth) + "-" + std::to_string(channels) + ".tif");
        WriteOptions options;
        options.compression = compression;
        write_image_atomic(path, image, options);
        INFO(path);
        CHECK(same_bytes(cv::imread(path, cv::IMREAD_UNCHANGED), image));
      }
    }
  }
}

TEST_CASE("TIFF: deflate (the default) is smaller than none on a smooth float image") {
  TempDir dir;
  cv::Mat image(256, 256, CV_32FC3);
  for (int r = 0; r < image.rows; ++r)
    for (int c = 0; c < image.cols; ++c)
      image.at<cv::Vec3f>(r, c) =
          cv::Vec3f(static_cast<float>(r) * 0.5F, static_cast<float>(c) * 0.25F, static_cast<float>(-(r + c)) * 0.125F);
  write_image_atomic(dir.file("default.tif"), image);
  WriteOptions none;
  none.compression = "none";
  write_image_atomic(dir.file("none.tif"), image, none);
  CHECK(fs::file_size(dir.file("default.tif")) * 4 < fs::file_size(dir.file("none.tif")));
}

TEST_CASE("cuconv: a float result with negative values to .tif equals filter2D's bit for bit") {
  TempDir dir;
  const std::string out = dir.file("out.tif");
  // A derivative filter: half the results are negative.
  const auto result =
      run_cuconv({sample("coffee.png"), out, "--filter", "sobel-x", "--depth", "32f", "--variant", "opencv"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  ConvolveOptions options;
  options.variant = Variant::opencv;
  options.depth = Depth::f32;
  const cv::Mat expected = convolve(read_image(sample("coffee.png")), load_filter("sobel-x"), options).image;
  double lowest = 0;
  cv::minMaxLoc(expected.reshape(1), &lowest);
  REQUIRE(lowest < 0);
  CHECK(same_bytes(cv::imread(out, cv::IMREAD_UNCHANGED), expected));
}

TEST_CASE("cuconv: --depth 16s on 3- and 4-channel images is written to .tif") {
  // Before issue 23 this filtered the whole image, then failed inside OpenCV's TIFF encoder (exit 4).
  TempDir dir;
  for (const std::string input : {"coffee.png", "logo.png"}) {
    const std::string out = dir.file(input + ".tif");
    const auto result =
        run_cuconv({sample(input), out, "--filter", "sobel-x", "--depth", "16s", "--variant", "opencv"});
    INFO(input, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    ConvolveOptions options;
    options.variant = Variant::opencv;
    options.depth = Depth::s16;
    const cv::Mat expected = convolve(read_image(sample(input)), load_filter("sobel-x"), options).image;
    CHECK(same_bytes(cv::imread(out, cv::IMREAD_UNCHANGED), expected));
  }
}

TEST_CASE("PNM: colour to .pgm, gray to .ppm and anything but 8-bit gray to .pbm are refused by the format check") {
  // Before issue 49 these passed the check and failed in OpenCV's encoder after the work.
  const auto refusal = [](const std::string& path, int depth, int channels) {
    try {
      check_output_format(path, depth, channels);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::output);
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal("x.pgm", CV_8U, 3).find("x.pgm: .pgm cannot hold 3 channels (colour) (use .ppm") == 0);
  CHECK(refusal("x.ppm", CV_16U, 1).find("x.ppm: .ppm cannot hold 1 channel (gray) (use .pgm") == 0);
  CHECK(refusal("x.pbm", CV_8U, 3).find(".pbm cannot hold 3 channels") != std::string::npos);
  CHECK(refusal("x.pbm", CV_16U, 1).find(".pbm cannot hold 16U") != std::string::npos);
  CHECK(refusal("x.pgm", CV_8U, 4).find(".pgm cannot hold 4 channels") != std::string::npos);
  CHECK(refusal("x.pnm", CV_8U, 4).find("cannot store an alpha channel") != std::string::npos);
  for (const auto& [name, count] : std::vector<std::pair<std::string, int>>{
           {"x.pgm", 1}, {"x.ppm", 3}, {"x.pnm", 1}, {"x.pnm", 3}, {"x.pbm", 1}, {"x.PGM", 1}}) {
    const std::string path = name;  // plain locals: clang-tidy 14 cannot see bindings in CHECK_MESSAGE's lambda
    const int channels = count;
    CHECK_MESSAGE(refusal(path, CV_8U, channels).empty(), path, " ", channels);
  }
}

TEST_CASE("PBM: only a two-level image (0 and 255) is written, any other value is refused, no file left") {
  // Before issue 49 a gray image became 1 bit per pixel: every value but 0 written as white.
  TempDir dir;
  cv::Mat two_level(5, 9, CV_8UC1, cv::Scalar(255));
  two_level.at<std::uint8_t>(2, 3) = 0;
  CHECK(is_two_level(two_level));
  write_image_atomic(dir.file("ok.pbm"), two_level);
  CHECK(same_bytes(cv::imread(dir.file("ok.pbm"), cv::IMREAD_UNCHANGED), two_level));

  cv::Mat gray = two_level.clone();
  gray.at<std::uint8_t>(4, 8) = 17;
  CHECK_FALSE(is_two_level(gray));
  CHECK_FALSE(is_two_level(cv::Mat(2, 2, CV_8UC3, cv::Scalar::all(255))));
  CHECK_NOTHROW(check_two_level(dir.file("gray.pgm"), gray));  // only .pbm needs two levels
  try {
    write_image_atomic(dir.file("gray.pbm"), gray);
    FAIL("a gray image was written to .pbm");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::output);
    CHECK(std::string(e.what()).find(".pbm stores black and white only") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir.file("gray.pbm")));
}

TEST_CASE("cuconv: .pgm/.ppm/.pbm that cannot hold the result exit 4 before filtering, in cuconv's words") {
  TempDir dir;
  const auto run = [&](const std::string& input, const std::string& out, const std::string& filter) {
    return run_cuconv({input, dir.file(out), "--filter", filter, "--variant", "opencv", "-v"});
  };
  for (const auto& [input, out_name, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {sample("coffee.png"), "colour.pgm", ".pgm cannot hold 3 channels (colour)"},
           {sample("camera.png"), "gray.ppm", ".ppm cannot hold 1 channel (gray)"},
           {sample("coffee.png"), "colour.pbm", ".pbm cannot hold 3 channels"}}) {
    const std::string out = out_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
    const auto result = run(input, out, "gauss5");
    INFO(out, ": ", result.err);
    CHECK(result.exit_code == static_cast<int>(ExitCode::output));
    CHECK(result.err.find(message) != std::string::npos);
    CHECK(result.err.find("OpenCV") == std::string::npos);
    CHECK(result.err.find("variant opencv:") == std::string::npos);  // the filter never ran
    CHECK_FALSE(fs::exists(dir.file(out)));
  }
  // A blurred gray image is not two-level: refused, no file.
  const auto blurred = run(sample("camera.png"), "blur.pbm", "gauss5");
  CHECK(blurred.exit_code == static_cast<int>(ExitCode::output));
  CHECK(blurred.err.find(".pbm stores black and white only") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("blur.pbm")));
  // A two-level image filtered with the identity goes to .pbm unchanged.
  cv::Mat checks(16, 16, CV_8UC1, cv::Scalar(0));
  checks(cv::Rect(0, 0, 8, 8)).setTo(255);
  REQUIRE(cv::imwrite(dir.file("checks.png"), checks));
  const auto identity = run(dir.file("checks.png"), "checks.pbm", "1x1:1");
  INFO(identity.err);
  REQUIRE(identity.exit_code == 0);
  CHECK(same_bytes(cv::imread(dir.file("checks.pbm"), cv::IMREAD_UNCHANGED), checks));
}

namespace {

/// One claimed format (docs/formats.md's table) at one depth and channel count.
struct FormatCase {
  const char* extension;
  int depth;
  int channels;
};

/// Every lossless format of docs/formats.md but PNG and TIFF (tested above), at the depths and
/// channel counts the table claims; WebP at its default (lossless).
constexpr FormatCase kRoundTrips[] = {{"pgm", CV_8U, 1},  {"pgm", CV_16U, 1}, {"ppm", CV_8U, 3},  {"ppm", CV_16U, 3},
                                      {"pnm", CV_8U, 1},  {"exr", CV_32F, 1}, {"exr", CV_32F, 3}, {"exr", CV_32F, 4},
                                      {"pfm", CV_32F, 1}, {"pfm", CV_32F, 3}, {"bmp", CV_8U, 1},  {"bmp", CV_8U, 3},
                                      {"bmp", CV_8U, 4},  {"webp", CV_8U, 3}, {"webp", CV_8U, 4}};

std::string describe(const FormatCase& c) {
  return std::string(c.extension) + " " + depth_name(c.depth) + " x" + std::to_string(c.channels);
}

/// What reading back `written` gives, where a format keeps less than it was given (docs/formats.md
/// says which): BMP's reader (OpenCV) drops the alpha channel; lossless WebP (libwebp, not in its
/// exact mode) zeroes the colour under fully transparent pixels.
cv::Mat as_read_back(const FormatCase& c, const cv::Mat& written) {
  if (c.channels != 4) return written;
  if (std::string(c.extension) == "bmp") {
    cv::Mat colour;
    cv::cvtColor(written, colour, cv::COLOR_BGRA2BGR);
    return colour;
  }
  return written;  // WebP keeps fully transparent pixels' colour (libwebp's exact mode)
}

}  // namespace

TEST_CASE("formats: PNM, EXR, PFM, BMP and WebP read back the pixels written") {
  TempDir dir;
  for (const FormatCase& c : kRoundTrips) {
    const cv::Mat image = random_image(23, 37, c.depth, c.channels, 91);
    const std::string path = dir.file("round." + std::string(c.extension));
    INFO(describe(c));
    write_image_atomic(path, image);
    CHECK(same_bytes(read_image(path), as_read_back(c, image)));
  }
}

TEST_CASE("formats: one-channel 16S TIFF reads back bit for bit, every compression") {
  TempDir dir;
  cv::Mat image(23, 37, CV_16SC1);
  cv::RNG(17).fill(image, cv::RNG::UNIFORM, -32768, 32768);
  for (const std::string compression : {"", "none", "lzw", "deflate"}) {
    const std::string path = dir.file("s16-" + compression + ".tif");
    WriteOptions options;
    options.compression = compression;
    write_image_atomic(path, image, options);
    INFO(path);
    CHECK(same_bytes(cv::imread(path, cv::IMREAD_UNCHANGED), image));  // read_image takes 8U, 16U, 32F
  }
}

TEST_CASE("formats: a two-level gray image round-trips through .pbm") {
  TempDir dir;
  cv::Mat image = random_image(19, 45, CV_8U, 1, 5);  // 45 columns: rows end mid-byte in the file
  cv::threshold(image, image, 127, 255, cv::THRESH_BINARY);
  const std::string path = dir.file("two-level.pbm");
  write_image_atomic(path, image);
  CHECK(same_bytes(read_image(path), image));
  // The file is a PBM (P4: one bit a pixel), not a gray map under a .pbm name.
  CHECK(read_file(path).rfind("P4", 0) == 0);
}

TEST_CASE("cuconv: each format of the round trips read as input and written as output, filtered as filter2D") {
  TempDir dir;
  const Filter box = load_filter("box3");
  int index = 0;
  for (const FormatCase& c : kRoundTrips) {
    INFO(describe(c));
    const std::string name = std::to_string(index++) + "." + c.extension;
    const cv::Mat image = random_image(23, 37, c.depth, c.channels, 93);
    ConvolveOptions options;
    options.variant = Variant::opencv;
    // Read: the format as input, a lossless TIFF as output.
    const std::string in = dir.file("in-" + name);
    write_image_atomic(in, image);
    const std::string tif = dir.file("out-" + name + ".tif");
    const auto read_run = run_cuconv({in, tif, "--filter", "box3", "--variant", "opencv"});
    REQUIRE_MESSAGE(read_run.exit_code == 0, read_run.err);
    CHECK(same_bytes(read_image(tif), convolve(as_read_back(c, image), box, options).image));
    // Write: a lossless TIFF as input, the format as output.
    const std::string tif_in = dir.file("in-" + name + ".tif");
    write_image_atomic(tif_in, image);
    const std::string out = dir.file("out-" + name);
    const auto write_run = run_cuconv({tif_in, out, "--filter", "box3", "--variant", "opencv"});
    REQUIRE_MESSAGE(write_run.exit_code == 0, write_run.err);
    CHECK(same_bytes(read_image(out), as_read_back(c, convolve(image, box, options).image)));
  }
}

TEST_CASE("cuconv: --depth 16s on a one-channel image is written to .tif as filter2D's result") {
  TempDir dir;
  const std::string out = dir.file("s16.tif");
  const auto r =
      run_cuconv({sample("camera.png"), out, "--filter", "sobel-x", "--depth", "16s", "--variant", "opencv"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  ConvolveOptions options;
  options.variant = Variant::opencv;
  options.depth = Depth::s16;
  const cv::Mat src = read_image(sample("camera.png"));
  REQUIRE(src.channels() == 1);
  const cv::Mat expected = convolve(src, load_filter("sobel-x"), options).image;
  double lowest = 0;
  cv::minMaxLoc(expected, &lowest);
  REQUIRE(lowest < 0);
  CHECK(same_bytes(cv::imread(out, cv::IMREAD_UNCHANGED), expected));
}
