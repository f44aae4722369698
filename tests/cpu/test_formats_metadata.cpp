// SPDX-License-Identifier: Apache-2.0
// Metadata carried from input to output: ICC profiles (and PNG's iCCP keyword), EXIF and XMP,
// Orientation with and without --auto-orient, --strip, in single-image and batch mode.
#include "formats_support.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace cuconv;
using namespace cuconv::test;
namespace fs = std::filesystem;

namespace {

/// A TIFF-structured EXIF block (little-endian) holding only IFD0's Orientation tag.
std::vector<unsigned char> exif_with_orientation(int orientation) {
  return {'I',
          'I',
          42,
          0,
          8,
          0,
          0,
          0,  // header, IFD0 at byte 8
          1,
          0,  // one entry
          0x12,
          0x01,
          3,
          0,
          1,
          0,
          0,
          0,  // tag 0x0112 (Orientation), SHORT, count 1
          static_cast<unsigned char>(orientation),
          0,
          0,
          0,  // the value
          0,
          0,
          0,
          0};  // no next IFD
}

const std::string kXmp =
    "<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>"
    "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">"
    "<rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" dc:format=\"cuconv-test\"/>"
    "</rdf:RDF></x:xmpmeta><?xpacket end=\"w\"?>";

/// Writes `image` to `path` with an EXIF block holding `orientation`, and `xmp` when given.
void write_tagged(const std::string& path, const cv::Mat& image, int orientation, const std::string& xmp = "") {
  ImageMetadata metadata;
  metadata.exif = exif_with_orientation(orientation);
  metadata.xmp = xmp;
  WriteOptions options;
  options.metadata = &metadata;
  write_image_atomic(path, image, options);
}

}  // namespace

TEST_CASE("metadata: the ICC profile of a PNG is kept in PNG, JPEG and TIFF outputs, dropped by --strip") {
  // Before issue 23 every output lost it.
  const ImageMetadata input = read_metadata(sample("astronaut.png"));
  REQUIRE(!input.icc.empty());
  TempDir dir;
  for (const std::string out : {"out.png", "out.jpg", "out.tif"}) {
    const auto result =
        run_cuconv({sample("astronaut.png"), dir.file(out), "--filter", "gauss5", "--variant", "opencv"});
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(read_metadata(dir.file(out)).icc == input.icc);
  }
  const auto stripped = run_cuconv(
      {sample("astronaut.png"), dir.file("stripped.png"), "--filter", "gauss5", "--variant", "opencv", "--strip"});
  REQUIRE(stripped.exit_code == 0);
  CHECK(read_metadata(dir.file("stripped.png")).empty());
}

TEST_CASE("metadata: EXIF and XMP travel from input to output") {
  TempDir dir;
  const cv::Mat stored = random_image(24, 40, CV_8U, 3, 3);
  write_tagged(dir.file("in.png"), stored, 6, kXmp);
  for (const std::string out : {"out.jpg", "out.png", "out.webp", "out.tif"}) {
    const auto result = run_cuconv({dir.file("in.png"), dir.file(out), "--filter", "1x1:1", "--variant", "opencv"});
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    const ImageMetadata kept = read_metadata(dir.file(out));
    // read_metadata reports a TIFF's Orientation as 1 (its decoder rotates); the pixels below show the 6.
    CHECK(exif_orientation(kept) == (out == "out.tif" ? 1 : 6));
    CHECK(kept.xmp.find("cuconv-test") != std::string::npos);
  }
  // OpenCV's TIFF decoder applies the tag itself: the TIFF reads back upright.
  cv::Mat upright;
  cv::rotate(stored, upright, cv::ROTATE_90_CLOCKWISE);
  CHECK(same_bytes(cv::imread(dir.file("out.tif"), cv::IMREAD_UNCHANGED), upright));
}

TEST_CASE("metadata: float TIFF pixels stay exact with EXIF, ICC and XMP in the file") {
  TempDir dir;
  ImageMetadata metadata = read_metadata(sample("astronaut.png"));
  REQUIRE(!metadata.icc.empty());
  metadata.exif = exif_with_orientation(1);
  metadata.xmp = kXmp;
  WriteOptions options;
  options.metadata = &metadata;
  for (const int channels : {1, 3, 4}) {
    const cv::Mat floats = awkward_float_image(channels);
    const std::string path = dir.file("floats" + std::to_string(channels) + ".tif");
    write_image_atomic(path, floats, options);
    CHECK(same_bytes(cv::imread(path, cv::IMREAD_UNCHANGED), floats));
    const ImageMetadata kept = read_metadata(path);
    CHECK(kept.icc == metadata.icc);
    CHECK(kept.xmp.find("cuconv-test") != std::string::npos);
  }
}

TEST_CASE("metadata: a TIFF input with Orientation 6 is read upright and its output says 1") {
  TempDir dir;
  const cv::Mat stored = random_image(24, 40, CV_16U, 3, 8);
  write_tagged(dir.file("in.tif"), stored, 6);
  const auto result = run_cuconv({dir.file("in.tif"), dir.file("out.png"), "--filter", "1x1:1", "--variant", "opencv"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  cv::Mat upright;
  cv::rotate(stored, upright, cv::ROTATE_90_CLOCKWISE);
  CHECK(same_bytes(cv::imread(dir.file("out.png"), cv::IMREAD_UNCHANGED), upright));
  CHECK(exif_orientation(read_metadata(dir.file("out.png"))) == 1);
}

TEST_CASE("--auto-orient rotates the pixels upright and resets Orientation to 1, without it the tag is kept") {
  TempDir dir;
  const cv::Mat stored = random_image(24, 40, CV_8U, 3, 4);  // 40 wide as stored
  // What a viewer shows for each Orientation value (EXIF 2.3, Orientation).
  std::map<int, cv::Mat> upright;
  cv::flip(stored, upright[2], 1);
  cv::rotate(stored, upright[3], cv::ROTATE_180);
  cv::flip(stored, upright[4], 0);
  cv::transpose(stored, upright[5]);
  cv::rotate(stored, upright[6], cv::ROTATE_90_CLOCKWISE);
  cv::rotate(stored, upright[7], cv::ROTATE_90_COUNTERCLOCKWISE);
  cv::flip(upright[7], upright[7], 1);
  cv::rotate(stored, upright[8], cv::ROTATE_90_COUNTERCLOCKWISE);
  for (const auto& [tag, expected] : upright) {
    const int orientation = tag;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
    const std::string in = dir.file("in" + std::to_string(orientation) + ".png");
    write_tagged(in, stored, orientation);
    const std::string out = dir.file("upright" + std::to_string(orientation) + ".png");
    const auto result = run_cuconv({in, out, "--filter", "1x1:1", "--variant", "opencv", "--auto-orient"});
    INFO("orientation ", orientation, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(same_bytes(cv::imread(out, cv::IMREAD_UNCHANGED), expected));
    CHECK(exif_orientation(read_metadata(out)) == 1);
  }
  // With --strip too: rotated all the same, and no metadata at all.
  const std::string bare = dir.file("bare.png");
  REQUIRE(
      run_cuconv({dir.file("in6.png"), bare, "--filter", "1x1:1", "--variant", "opencv", "--auto-orient", "--strip"})
          .exit_code == 0);
  CHECK(same_bytes(cv::imread(bare, cv::IMREAD_UNCHANGED), upright[6]));
  CHECK(read_metadata(bare).empty());
  // Without --auto-orient: pixels as stored, the tag kept, so a viewer still shows it upright.
  const std::string kept = dir.file("kept.png");
  REQUIRE(run_cuconv({dir.file("in6.png"), kept, "--filter", "1x1:1", "--variant", "opencv"}).exit_code == 0);
  CHECK(same_bytes(cv::imread(kept, cv::IMREAD_UNCHANGED), stored));
  CHECK(exif_orientation(read_metadata(kept)) == 6);
}

TEST_CASE("an Orientation the output cannot keep (BMP, --strip) is warned about, naming --auto-orient") {
  TempDir dir;
  write_tagged(dir.file("in.png"), random_image(24, 40, CV_8U, 3, 6), 6);
  for (const auto& [out_name, extra] :
       std::vector<std::pair<std::string, std::string>>{{"out.bmp", ""}, {"out.png", "--strip"}}) {
    const std::string out = out_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
    std::vector<std::string> args = {dir.file("in.png"), dir.file(out), "--filter", "1x1:1", "--variant", "opencv"};
    if (!extra.empty()) args.push_back(extra);
    const auto result = run_cuconv(args);
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.err.find("EXIF Orientation 6 is not kept") != std::string::npos);
    CHECK(result.err.find("--auto-orient") != std::string::npos);
  }
  const auto upright = run_cuconv(
      {dir.file("in.png"), dir.file("upright.bmp"), "--filter", "1x1:1", "--variant", "opencv", "--auto-orient"});
  REQUIRE(upright.exit_code == 0);
  CHECK(upright.err.empty());
}

TEST_CASE("batch: metadata kept, --auto-orient and --strip as in single-image mode") {
  TempDir dir;
  const cv::Mat stored = random_image(24, 40, CV_8U, 3, 5);
  fs::create_directories(dir.file("in"));
  write_tagged(dir.file("in/a.png"), stored, 6);
  // More images than threads, each with XMP: the XMP toolkit is used from several threads at once.
  for (int i = 0; i < 12; ++i) write_tagged(dir.file("in/x" + std::to_string(i) + ".png"), stored, 1, kXmp);
  const auto kept = run_cuconv(
      {"--out-dir", dir.file("kept"), dir.file("in"), "--filter", "1x1:1", "--variant", "opencv", "--jobs", "4"});
  REQUIRE_MESSAGE(kept.exit_code == 0, kept.err);
  CHECK(exif_orientation(read_metadata(dir.file("kept/a.png"))) == 6);
  for (int i = 0; i < 12; ++i)
    CHECK(read_metadata(dir.file("kept/x" + std::to_string(i) + ".png")).xmp.find("cuconv-test") != std::string::npos);
  const auto oriented = run_cuconv(
      {"--out-dir", dir.file("oriented"), dir.file("in"), "--filter", "1x1:1", "--variant", "opencv", "--auto-orient"});
  REQUIRE_MESSAGE(oriented.exit_code == 0, oriented.err);
  cv::Mat expected;
  cv::rotate(stored, expected, cv::ROTATE_90_CLOCKWISE);
  CHECK(same_bytes(cv::imread(dir.file("oriented/a.png"), cv::IMREAD_UNCHANGED), expected));
  CHECK(exif_orientation(read_metadata(dir.file("oriented/a.png"))) == 1);
  const auto stripped = run_cuconv(
      {"--out-dir", dir.file("stripped"), dir.file("in"), "--filter", "1x1:1", "--variant", "opencv", "--strip"});
  REQUIRE_MESSAGE(stripped.exit_code == 0, stripped.err);
  CHECK(read_metadata(dir.file("stripped/a.png")).empty());
}

namespace {

/// The keyword of the first iCCP chunk of the PNG file `bytes` (nullopt: no iCCP chunk), after
/// checking the chunk's CRC.
std::optional<std::string> iccp_keyword(const std::string& bytes) {
  std::size_t pos = 8;
  const auto be32 = [&](std::size_t at) {
    return (std::uint32_t{static_cast<unsigned char>(bytes[at])} << 24) |
           (std::uint32_t{static_cast<unsigned char>(bytes[at + 1])} << 16) |
           (std::uint32_t{static_cast<unsigned char>(bytes[at + 2])} << 8) |
           std::uint32_t{static_cast<unsigned char>(bytes[at + 3])};
  };
  while (pos + 12 <= bytes.size()) {
    const std::size_t length = be32(pos);
    REQUIRE(pos + 12 + length <= bytes.size());
    if (bytes.compare(pos + 4, 4, "iCCP") == 0) {
      const auto* chunk = reinterpret_cast<const Bytef*>(bytes.data() + pos + 4);
      CHECK(crc32(0L, chunk, static_cast<uInt>(length + 4)) == be32(pos + 8 + length));
      return bytes.substr(pos + 8, bytes.find('\0', pos + 8) - (pos + 8));
    }
    pos += 12 + length;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("metadata: a PNG output names its ICC profile (iCCP keyword of 1-79 Latin-1 characters)") {
  // Before issue 49 the keyword was empty: libvips and ImageMagick print "iCCP: bad keyword" and
  // drop the profile. Checked with vipsheader where it is installed, else by reading the chunk.
  const ImageMetadata input = read_metadata(sample("astronaut.png"));
  REQUIRE(!input.icc.empty());
  TempDir dir;
  const auto result =
      run_cuconv({sample("astronaut.png"), dir.file("out.png"), "--filter", "gauss5", "--variant", "opencv"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const std::optional<std::string> keyword = iccp_keyword(read_file(dir.file("out.png")));
  REQUIRE(keyword.has_value());
  CHECK(!keyword->empty());
  CHECK(keyword->size() <= 79);
  CHECK(std::all_of(keyword->begin(), keyword->end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte >= 32 && byte <= 126) || byte >= 161;  // PNG: printable Latin-1
  }));
  CHECK(read_metadata(dir.file("out.png")).icc == input.icc);
  if (std::system("command -v vipsheader >/dev/null 2>&1") == 0) {
    const std::string command = "vipsheader -f icc-profile-data " + cuconv::test::shell_quote(dir.file("out.png")) +
                                " >/dev/null 2>" + cuconv::test::shell_quote(dir.file("vips.err"));
    CHECK(std::system(command.c_str()) == 0);
    CHECK(read_file(dir.file("vips.err")).find("bad keyword") == std::string::npos);
  }
}

TEST_CASE("WebP lossless keeps the colour of fully transparent pixels exactly") {
  // Before issue 49 libwebp (through OpenCV) rewrote them: up to 247 levels off.
  TempDir dir;
  cv::Mat image = random_image(33, 47, CV_8U, 4, 49);
  for (int r = 0; r < image.rows; ++r)
    for (int c = 0; c < image.cols; ++c)
      if ((r + c) % 3 == 0) image.at<cv::Vec4b>(r, c)[3] = 0;  // a third of the pixels transparent
  REQUIRE(cv::imwrite(dir.file("in.png"), image));
  const auto result =
      run_cuconv({dir.file("in.png"), dir.file("out.webp"), "--filter", "1x1:1", "--variant", "opencv"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(same_bytes(cv::imread(dir.file("out.webp"), cv::IMREAD_UNCHANGED), image));
  // The library call too, with EXIF and XMP added by exiv2 to libwebp's file.
  write_tagged(dir.file("direct.webp"), image, 3, kXmp);
  CHECK(same_bytes(cv::imread(dir.file("direct.webp"), cv::IMREAD_UNCHANGED), image));
  const ImageMetadata kept = read_metadata(dir.file("direct.webp"));
  CHECK(exif_orientation(kept) == 3);
  CHECK(kept.xmp.find("cuconv-test") != std::string::npos);
}
