// SPDX-License-Identifier: Apache-2.0
// Issue 62, Deliver 2: the metadata a photographer expects survives a run. Pixel density (TIFF
// X/YResolution, PNG pHYs, JPEG JFIF) goes from every input format that holds it to every output
// format that holds it, read back by a reader that is not cuconv's (Pillow, else ImageMagick's
// identify); `-v` says what was kept and what dropped; a dropped ICC profile warns once; a 16S
// TIFF cuconv writes is read back or refused naming `--depth`.
#include "test_support.hpp"

#include "codec/jpeg_encode.hpp"
#include "codec/jpeg_markers.hpp"
#include "codec/metadata.hpp"
#include "codec/tiff_codec.hpp"

#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using cuconv::test::random_image;
using cuconv::test::read_file;
using cuconv::test::run_cuconv;
using cuconv::test::shell_quote;
using cuconv::test::TempDir;

namespace {

using Dpi = std::pair<double, double>;

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

bool have(const char* command) { return std::system(command) == 0; }

/// Which independent reader this machine has: "pillow", "identify" or "" (none).
std::string independent_reader() {
  static const std::string reader = have("python3 -c 'import PIL' >/dev/null 2>&1") ? "pillow"
                                    : have("command -v identify >/dev/null 2>&1")   ? "identify"
                                                                                    : "";
  return reader;
}

/// The density `path` declares in dots per inch, as Pillow (its `dpi`) or ImageMagick (its
/// resolution and units) reads it; nullopt when the reader finds none.
std::optional<Dpi> dpi_read_by_others(const std::string& path, const TempDir& dir) {
  const std::string out = dir.file("reader.out");
  std::string command;
  if (independent_reader() == "pillow")
    command =
        "python3 -c 'import sys; from PIL import Image; d = Image.open(sys.argv[1]).info.get(\"dpi\"); "
        "print(\"%f %f\" % (float(d[0]), float(d[1])) if d else \"none\")' " +
        shell_quote(path);
  else
    command = "identify -format '%x %y %U' " + shell_quote(path);
  REQUIRE(std::system((command + " >" + shell_quote(out) + " 2>&1").c_str()) == 0);
  std::istringstream text(read_file(out));
  double x = 0, y = 0;
  std::string unit = "PixelsPerInch";
  if (!(text >> x >> y)) return std::nullopt;
  text >> unit;
  if (unit == "PixelsPerCentimeter") return Dpi{x * 2.54, y * 2.54};
  if (unit != "PixelsPerInch" || (x == 0 && y == 0)) return std::nullopt;
  return Dpi{x, y};
}

/// An input of `ext` (".tif", ".png", ".jpg") at `dpi`, written by cuconv's own encoders (the
/// reader above checks them too).
std::string write_input(const TempDir& dir, const std::string& ext, int depth, Dpi dpi) {
  std::string path = dir.file("in" + ext);
  const cv::Mat image = random_image(24, 32, depth, 3, 62);
  if (ext == ".tif")
    write_bytes(
        path, cuconv::codec::encode_tiff(path, image, cuconv::codec::TiffCompression::deflate, dpi.first, dpi.second));
  else if (ext == ".jpg")
    write_bytes(path, cuconv::codec::encode_jpeg(image, 90, dpi.first, dpi.second).value());
  else
    write_bytes(path, cuconv::codec::with_png_density(cuconv::encode_image(path, image, {}), dpi.first, dpi.second));
  return path;
}

void check_dpi(const std::optional<Dpi>& read, Dpi expected, double tolerance) {
  REQUIRE(read.has_value());
  CHECK(read->first == doctest::Approx(expected.first).epsilon(tolerance));
  CHECK(read->second == doctest::Approx(expected.second).epsilon(tolerance));
}

}  // namespace

TEST_CASE("metadata: the resolution (dpi) goes from TIFF, PNG and JPEG inputs into TIFF, PNG and JPEG outputs") {
  if (independent_reader().empty()) {
    MESSAGE("skipped: neither Pillow (python3 -c 'import PIL') nor ImageMagick's identify is installed");
    return;
  }
  // X and Y differ, so a swap shows; PNG counts per metre (300 dpi = 11811/m), JFIF whole dots.
  const Dpi dpi{300, 150};
  struct Case {
    std::string in;
    int depth;
    std::string out;
  };
  const std::vector<Case> cases{{".tif", CV_16U, ".tif"}, {".tif", CV_16U, ".png"}, {".tif", CV_8U, ".jpg"},
                                {".png", CV_8U, ".tif"},  {".png", CV_8U, ".png"},  {".png", CV_8U, ".jpg"},
                                {".jpg", CV_8U, ".tif"},  {".jpg", CV_8U, ".png"},  {".jpg", CV_8U, ".jpg"}};
  for (const Case& c : cases) {
    CAPTURE(c.in);
    CAPTURE(c.out);
    TempDir dir;
    const std::string input = write_input(dir, c.in, c.depth, dpi);
    check_dpi(dpi_read_by_others(input, dir), dpi, 1e-4);
    const std::string output = dir.file("out" + c.out);
    const auto result = run_cuconv({input, output, "--filter", "gauss3", "--variant", "opencv"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    check_dpi(dpi_read_by_others(output, dir), dpi, 1e-4);
  }
}

TEST_CASE("metadata: --strip leaves the resolution out too") {
  if (independent_reader().empty()) {
    MESSAGE("skipped: neither Pillow nor ImageMagick's identify is installed");
    return;
  }
  TempDir dir;
  const std::string input = write_input(dir, ".tif", CV_16U, {300, 300});
  const auto result = run_cuconv({input, dir.file("out.png"), "--filter", "gauss3", "--variant", "opencv", "--strip"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(!dpi_read_by_others(dir.file("out.png"), dir).has_value());
}

TEST_CASE("read_metadata: the resolution of each format in dots per inch, centimetres converted") {
  TempDir dir;
  const cv::Mat image = random_image(8, 8, CV_8U, 1, 7);
  const std::string plain = dir.file("plain.png");
  write_bytes(plain, cuconv::encode_image(plain, image, {}));
  const cuconv::ImageMetadata none = cuconv::read_metadata(plain);
  CHECK(none.dpi_x == 0);
  CHECK(none.empty());
  for (const std::string ext : {".tif", ".png", ".jpg"}) {
    CAPTURE(ext);
    const cuconv::ImageMetadata read = cuconv::read_metadata(write_input(dir, ext, CV_8U, {72, 600}));
    // PNG counts whole dots per metre: 72 dpi is stored as 2835/m, 72.009 dpi.
    CHECK(read.dpi_x == doctest::Approx(72).epsilon(2e-4));
    CHECK(read.dpi_y == doctest::Approx(600).epsilon(2e-4));
    CHECK(!read.empty());
  }
}

TEST_CASE("metadata: -v lists what the output kept and what its format dropped") {
  TempDir dir;
  const std::string input = write_input(dir, ".tif", CV_8U, {300, 300});
  const std::string photo = cuconv::test::sample("astronaut.png");  // an ICC profile and pHYs, no EXIF
  REQUIRE(!cuconv::read_metadata(photo).icc.empty());
  struct Case {
    std::string input, output, line;
  };
  const std::vector<Case> cases{
      {input, "out.tif", "out.tif: metadata kept: EXIF, resolution\n"},
      {input, "out.webp", "out.webp: metadata kept: EXIF; dropped (.webp cannot hold it): resolution\n"},
      {input, "out.bmp", "out.bmp: metadata kept: none; dropped (.bmp cannot hold it): EXIF, resolution\n"},
      {photo, "photo.webp",
       "photo.webp: metadata kept: none; dropped (.webp cannot hold it): ICC profile, resolution\n"},
      {photo, "photo.png", "photo.png: metadata kept: ICC profile, resolution\n"}};
  for (const Case& c : cases) {
    CAPTURE(c.output);
    const auto result = run_cuconv({c.input, dir.file(c.output), "--filter", "gauss3", "--variant", "opencv", "-v"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.err.find(c.line) != std::string::npos);
  }
}

TEST_CASE("metadata: a dropped ICC profile warns once a command, also over a folder") {
  TempDir dir;
  const std::string photo = cuconv::test::sample("astronaut.png");
  const auto single = run_cuconv({photo, dir.file("one.webp"), "--filter", "gauss3", "--variant", "opencv"});
  INFO(single.err);
  REQUIRE(single.exit_code == 0);
  const std::string warning = "ICC colour profile is dropped (.webp cannot hold one here)";
  CHECK(single.err.find(warning) != std::string::npos);
  const auto kept = run_cuconv({photo, dir.file("one.png"), "--filter", "gauss3", "--variant", "opencv"});
  CHECK(kept.err.find("ICC colour profile is dropped") == std::string::npos);
  // Three inputs with a profile, one command: one warning.
  std::filesystem::create_directories(dir.file("in"));
  for (const char* name : {"a.png", "b.png", "c.png"}) std::filesystem::copy_file(photo, dir.file("in/") + name);
  const auto batch = run_cuconv(
      {dir.file("in"), "--out-dir", dir.file("out"), "--name", "%s.webp", "--filter", "gauss3", "--variant", "opencv"});
  INFO(batch.err);
  REQUIRE(batch.exit_code == 0);
  std::size_t count = 0;
  for (std::size_t at = batch.err.find(warning); at != std::string::npos; at = batch.err.find(warning, at + 1)) ++count;
  CHECK(count == 1);
}

TEST_CASE("metadata: a 16S TIFF cuconv writes is refused as an input naming --depth") {
  TempDir dir;
  const std::string input = write_input(dir, ".png", CV_8U, {0, 0});
  const auto wrote =
      run_cuconv({input, dir.file("edges.tif"), "--filter", "sobel-x", "--depth", "16s", "--variant", "opencv"});
  INFO(wrote.err);
  REQUIRE(wrote.exit_code == 0);
  const auto again =
      run_cuconv({dir.file("edges.tif"), dir.file("again.tif"), "--filter", "gauss3", "--variant", "opencv"});
  INFO(again.err);
  CHECK(again.exit_code == 3);
  CHECK(again.err.find("16S is an output depth only") != std::string::npos);
  CHECK(again.err.find("--depth 32f") != std::string::npos);
  // Written as 32F, as the message says, the result is filtered again.
  const auto as_float =
      run_cuconv({input, dir.file("edges32.tif"), "--filter", "sobel-x", "--depth", "32f", "--variant", "opencv"});
  REQUIRE(as_float.exit_code == 0);
  const auto follow =
      run_cuconv({dir.file("edges32.tif"), dir.file("again32.tif"), "--filter", "gauss3", "--variant", "opencv"});
  INFO(follow.err);
  CHECK(follow.exit_code == 0);
}

TEST_CASE("with_jfif_density: the GPU codec's JPEG output takes the input's JFIF density") {
  // nvJPEG's encoder writes no density; the GPU route patches the output's APP0 or adds one.
  TempDir dir;
  const cv::Mat image = random_image(16, 16, CV_8U, 3, 5);
  const std::vector<unsigned char> source = cuconv::codec::encode_jpeg(image, 90, 300, 150).value();
  const cuconv::codec::JpegMarkers markers = cuconv::codec::read_jpeg_markers(source);
  const std::vector<unsigned char> with_app0 = cuconv::codec::encode_jpeg(image, 90).value();
  REQUIRE(with_app0[3] == 0xE0);
  std::vector<unsigned char> without_app0 = with_app0;  // SOI, then the encoder's APP0 cut out
  without_app0.erase(without_app0.begin() + 2, without_app0.begin() + 4 + ((with_app0[4] << 8) | with_app0[5]));
  for (const auto& [case_name, encoded] : {std::pair{"patched", with_app0}, std::pair{"added", without_app0}}) {
    const char* const name = case_name;  // a plain local: clang-tidy 14 cannot see bindings in CAPTURE's lambda
    CAPTURE(name);
    const std::string path = dir.file(std::string(name) + ".jpg");
    write_bytes(path, cuconv::codec::with_jfif_density(encoded, markers));
    CHECK(!cv::imread(path, cv::IMREAD_UNCHANGED).empty());
    const cuconv::ImageMetadata read = cuconv::read_metadata(path);
    CHECK(read.dpi_x == 300);
    CHECK(read.dpi_y == 150);
    if (!independent_reader().empty()) check_dpi(dpi_read_by_others(path, dir), {300, 150}, 1e-6);
  }
  // A source without a density leaves the output as it is.
  const cuconv::codec::JpegMarkers none = cuconv::codec::read_jpeg_markers(with_app0);
  CHECK(cuconv::codec::with_jfif_density(without_app0, none) == without_app0);
}
