// SPDX-License-Identifier: Apache-2.0
// Output formats (issue 23): lossless TIFF for every depth and channel count, the encoder options
// (--quality, --compression), and metadata (EXIF, ICC, XMP; --strip, --auto-orient) carried from
// input to output, in single-image and batch mode.
#include "test_support.hpp"
#include "text_lines.hpp"

#include "cli/session.hpp"
#include "engine/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "cli/command_line.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <opencv2/imgproc.hpp>

using namespace cuconv;
using cuconv::test::lines_of;
using cuconv::test::random_image;
using cuconv::test::read_file;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

namespace fs = std::filesystem;

/// Same size, type and bytes: -0.0 differs from 0.0, a NaN equals the same NaN.
bool same_bytes(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  const std::size_t row_bytes = static_cast<std::size_t>(a.cols) * a.elemSize();
  for (int r = 0; r < a.rows; ++r)
    if (std::memcmp(a.ptr(r), b.ptr(r), row_bytes) != 0) return false;
  return true;
}

/// A random float image with the values lossy codecs get wrong: negatives, -0, tiny and huge
/// magnitudes, infinities and NaN.
cv::Mat awkward_float_image(int channels) {
  cv::Mat image = random_image(37, 29, CV_32F, channels, 23);
  float* values = image.ptr<float>(0);
  const float specials[] = {-0.0F, 1e-40F, -3.4e38F, 3.4e38F, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), -1e-7F};
  for (std::size_t i = 0; i < std::size(specials); ++i) values[i] = specials[i];
  return image;
}

/// A TIFF-structured EXIF block (little-endian) holding only IFD0's Orientation tag.
std::vector<unsigned char> exif_with_orientation(int orientation) {
  return {'I', 'I', 42, 0, 8, 0, 0, 0,                       // header, IFD0 at byte 8
          1, 0,                                             // one entry
          0x12, 0x01, 3, 0, 1, 0, 0, 0,                     // tag 0x0112 (Orientation), SHORT, count 1
          static_cast<unsigned char>(orientation), 0, 0, 0,  // the value
          0, 0, 0, 0};                                      // no next IFD
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

TEST_CASE("TIFF output round-trips bit for bit: 1, 3 and 4 channels of 8U, 16U and 32F, every compression") {
  // Before issue 23 OpenCV wrote 3-channel float with SGILOG (LogLuv): up to 2% off, and
  // negative values wrong.
  TempDir dir;
  for (const std::string compression : {"", "none", "lzw", "deflate"}) {
    for (const int depth : {CV_8U, CV_16U, CV_32F}) {
      for (const int channels : {1, 3, 4}) {
        const cv::Mat image = depth == CV_32F ? awkward_float_image(channels) : random_image(41, 33, depth, channels, 7);
        const std::string path = dir.file("out-" + compression + "-" + depth_name(depth) + "-" +
                                          std::to_string(channels) + ".tif");
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
    for (int c = 0; c < image.cols; ++c) image.at<cv::Vec3f>(r, c) = cv::Vec3f(r * 0.5F, c * 0.25F, -(r + c) * 0.125F);
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
  const auto result = run_cuconv({sample("coffee.png"), out, "--filter", "sobel-x", "--depth", "32f", "--variant", "opencv"});
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
    const auto result = run_cuconv({sample(input), out, "--filter", "sobel-x", "--depth", "16s", "--variant", "opencv"});
    INFO(input, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    ConvolveOptions options;
    options.variant = Variant::opencv;
    options.depth = Depth::s16;
    const cv::Mat expected = convolve(read_image(sample(input)), load_filter("sobel-x"), options).image;
    CHECK(same_bytes(cv::imread(out, cv::IMREAD_UNCHANGED), expected));
  }
}

TEST_CASE("--quality: JPEG defaults to 95, lower is smaller, WebP is lossless unless asked") {
  TempDir dir;
  const auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {sample("coffee.png"), dir.file(out), "--filter", "1x1:1", "--variant", "opencv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_cuconv(args);
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    return read_file(dir.file(out));
  };
  const std::string plain = run("plain.jpg", {});
  CHECK(plain == run("q95.jpg", {"--quality", "95"}));
  CHECK(run("q20.jpg", {"--quality", "20"}).size() * 2 < plain.size());
  run("lossless.webp", {});
  CHECK(same_bytes(cv::imread(dir.file("lossless.webp"), cv::IMREAD_UNCHANGED),
                   cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED)));
  const std::string lossy = run("q50.webp", {"--quality", "50"});
  CHECK(lossy.size() * 2 < read_file(dir.file("lossless.webp")).size());
}

TEST_CASE("--compression: PNG levels and TIFF codecs change the size, never the pixels") {
  TempDir dir;
  const cv::Mat input = cv::imread(sample("astronaut.png"), cv::IMREAD_UNCHANGED);
  std::map<std::string, std::uintmax_t> sizes;
  for (const auto& [out, level] : std::vector<std::pair<std::string, std::string>>{
           {"l0.png", "0"}, {"l9.png", "9"}, {"none.tif", "none"}, {"lzw.tif", "lzw"}, {"deflate.tif", "deflate"}}) {
    const auto result = run_cuconv({sample("astronaut.png"), dir.file(out), "--filter", "1x1:1", "--variant",
                                    "opencv", "--compression", level, "--strip"});
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(same_bytes(cv::imread(dir.file(out), cv::IMREAD_UNCHANGED), input));
    sizes[out] = fs::file_size(dir.file(out));
  }
  CHECK(sizes["l9.png"] < sizes["l0.png"]);
  CHECK(sizes["lzw.tif"] < sizes["none.tif"]);
  CHECK(sizes["deflate.tif"] < sizes["none.tif"]);
}

TEST_CASE("batch: --quality and --compression apply to the outputs whose format takes them, said once for the others") {
  // Before issue 49 `--quality 30` on a folder of JPEG, PNG and TIFF files refused the whole batch
  // (exit 2) because of its PNG.
  TempDir dir;
  fs::create_directories(dir.file("in"));
  const cv::Mat camera = cv::imread(sample("camera.png"), cv::IMREAD_UNCHANGED);
  const cv::Mat coffee = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
  REQUIRE(cv::imwrite(dir.file("in/a.png"), camera));
  REQUIRE(cv::imwrite(dir.file("in/b.jpg"), coffee));
  REQUIRE(cv::imwrite(dir.file("in/c.tif"), camera));
  const auto batch = [&](const std::string& out, std::vector<std::string> options) {
    std::vector<std::string> args{"--out-dir", dir.file(out), dir.file("in"), "--filter", "gauss5", "--variant", "opencv"};
    args.insert(args.end(), options.begin(), options.end());
    return run_cuconv(args);
  };
  const auto plain = batch("plain", {});
  REQUIRE(plain.exit_code == 0);
  const auto asked = batch("asked", {"--quality", "30", "--compression", "lzw"});
  INFO(asked.err);
  REQUIRE(asked.exit_code == 0);
  const std::string quality_note = "--quality 30 applies to JPEG and WebP outputs; 2 of 3 output(s) are written without it";
  const std::string compression_note = "--compression lzw applies to TIFF outputs; 2 of 3 output(s) are written without it";
  for (const std::string& note : {quality_note, compression_note}) {
    const std::size_t at = asked.err.find(note);
    CHECK(at != std::string::npos);
    CHECK(asked.err.find(note, at + 1) == std::string::npos);  // once, not once per output
  }
  CHECK(asked.err.find(dir.file("asked/a.png")) != std::string::npos);  // the note names them
  // The JPEG took the quality (far smaller than at the default 95), the TIFF the codec (another size
  // than the default deflate, the same pixels), the PNG neither (byte for byte the plain run's).
  CHECK(fs::file_size(dir.file("asked/b.jpg")) * 2 < fs::file_size(dir.file("plain/b.jpg")));
  CHECK(fs::file_size(dir.file("asked/c.tif")) != fs::file_size(dir.file("plain/c.tif")));
  CHECK(same_bytes(cv::imread(dir.file("asked/c.tif"), cv::IMREAD_UNCHANGED),
                   cv::imread(dir.file("plain/c.tif"), cv::IMREAD_UNCHANGED)));
  CHECK(read_file(dir.file("asked/a.png")) == read_file(dir.file("plain/a.png")));
  // A batch whose outputs all take the option says nothing about it.
  const auto only_png = run_cuconv({"--out-dir", dir.file("png"), dir.file("in/a.png"), "--filter", "gauss5", "--variant",
                                    "opencv", "--compression", "9"});
  CHECK(only_png.exit_code == 0);
  CHECK(only_png.err.find("written without it") == std::string::npos);
}

TEST_CASE("metadata: the ICC profile of a PNG is kept in PNG, JPEG and TIFF outputs, dropped by --strip") {
  // Before issue 23 every output lost it.
  const ImageMetadata input = read_metadata(sample("astronaut.png"));
  REQUIRE(!input.icc.empty());
  TempDir dir;
  for (const std::string out : {"out.png", "out.jpg", "out.tif"}) {
    const auto result = run_cuconv({sample("astronaut.png"), dir.file(out), "--filter", "gauss5", "--variant", "opencv"});
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(read_metadata(dir.file(out)).icc == input.icc);
  }
  const auto stripped = run_cuconv({sample("astronaut.png"), dir.file("stripped.png"), "--filter", "gauss5",
                                    "--variant", "opencv", "--strip"});
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
  for (const auto& [orientation, expected] : upright) {
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
  REQUIRE(run_cuconv({dir.file("in6.png"), bare, "--filter", "1x1:1", "--variant", "opencv", "--auto-orient", "--strip"})
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
  for (const auto& [out, extra] : std::vector<std::pair<std::string, std::string>>{{"out.bmp", ""}, {"out.png", "--strip"}}) {
    std::vector<std::string> args = {dir.file("in.png"), dir.file(out), "--filter", "1x1:1", "--variant", "opencv"};
    if (!extra.empty()) args.push_back(extra);
    const auto result = run_cuconv(args);
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.err.find("EXIF Orientation 6 is not kept") != std::string::npos);
    CHECK(result.err.find("--auto-orient") != std::string::npos);
  }
  const auto upright = run_cuconv({dir.file("in.png"), dir.file("upright.bmp"), "--filter", "1x1:1", "--variant",
                                   "opencv", "--auto-orient"});
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
  const auto kept = run_cuconv({"--out-dir", dir.file("kept"), dir.file("in"), "--filter", "1x1:1", "--variant", "opencv",
                                "--jobs", "4"});
  REQUIRE_MESSAGE(kept.exit_code == 0, kept.err);
  CHECK(exif_orientation(read_metadata(dir.file("kept/a.png"))) == 6);
  for (int i = 0; i < 12; ++i)
    CHECK(read_metadata(dir.file("kept/x" + std::to_string(i) + ".png")).xmp.find("cuconv-test") != std::string::npos);
  const auto oriented = run_cuconv({"--out-dir", dir.file("oriented"), dir.file("in"), "--filter", "1x1:1",
                                    "--variant", "opencv", "--auto-orient"});
  REQUIRE_MESSAGE(oriented.exit_code == 0, oriented.err);
  cv::Mat expected;
  cv::rotate(stored, expected, cv::ROTATE_90_CLOCKWISE);
  CHECK(same_bytes(cv::imread(dir.file("oriented/a.png"), cv::IMREAD_UNCHANGED), expected));
  CHECK(exif_orientation(read_metadata(dir.file("oriented/a.png"))) == 1);
  const auto stripped = run_cuconv({"--out-dir", dir.file("stripped"), dir.file("in"), "--filter", "1x1:1",
                                    "--variant", "opencv", "--strip"});
  REQUIRE_MESSAGE(stripped.exit_code == 0, stripped.err);
  CHECK(read_metadata(dir.file("stripped/a.png")).empty());
}

TEST_CASE("library messages: -q silent, one cuconv line by default, each with -v") {
  // Before issue 23 libpng's "iCCP: known incorrect sRGB profile" reached stderr even with -q.
  TempDir dir;
  const auto run = [&](const std::string& flag) {
    std::vector<std::string> args = {sample("astronaut.png"), dir.file("out.png"), "--filter", "gauss5", "--variant",
                                     "opencv", "--overwrite"};
    if (!flag.empty()) args.push_back(flag);
    const auto result = run_cuconv(args);
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    return result.err;
  };
  CHECK(run("-q").empty());
  const std::vector<std::string> summary = lines_of(run(""));
  REQUIRE(summary.size() == 1);
  CHECK(summary[0].starts_with("cuconv: warning: 1 message(s) from the image libraries"));
  CHECK(summary[0].find("iCCP") != std::string::npos);
  const std::string verbose = run("-v");
  CHECK(verbose.find("cuconv: info: image library: libpng warning: iCCP") != std::string::npos);
  for (const std::string& line : lines_of(verbose)) CHECK(line.starts_with("cuconv: "));
}

TEST_CASE("library messages: an undecodable input with -q gives cuconv's one error line, no OpenCV note") {
  // Before issue 23 OpenCV's "imread_('...'): can't read data: OpenCV(4.6.0) ..." came first.
  TempDir dir;
  const std::string input = dir.file("short.pgm");
  std::ofstream(input, std::ios::binary) << "P5\n4 4\n255\nab";
  const auto result = run_cuconv({input, dir.file("out.png"), "--filter", "gauss5", "-q"});
  CHECK(result.exit_code == static_cast<int>(ExitCode::bad_input));
  const std::vector<std::string> lines = lines_of(result.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].starts_with("cuconv: error: " + input + ": cannot decode image"));
}

TEST_CASE("library messages: batch mode with -q prints nothing for a noisy input") {
  TempDir dir;
  const auto result = run_cuconv({"--out-dir", dir.file("out"), sample("astronaut.png"), sample("camera.png"), "--filter",
                                  "gauss5", "--variant", "opencv", "-q"});
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
}

TEST_CASE("command line: --quality, --compression, --strip and --auto-orient reach both modes' requests") {
  const char* single[] = {"cuconv", "in.png", "out.jpg", "-f", "gauss5", "--quality", "80", "--strip", "--auto-orient"};
  const cli::ParsedCommand one = cli::parse_command_line(static_cast<int>(std::size(single)), single);
  REQUIRE(one.action == cli::Action::filter_image);
  CHECK(one.request.quality == 80);
  CHECK(one.request.compression.empty());
  CHECK(one.request.strip_metadata);
  CHECK(one.request.auto_orient);
  CHECK(cli::write_options_of(one.request).quality == 80);

  const char* batch[] = {"cuconv", "--out-dir", "out", "in", "-f", "gauss5", "--compression", "deflate", "--auto-orient"};
  const cli::ParsedCommand many = cli::parse_command_line(static_cast<int>(std::size(batch)), batch);
  REQUIRE(many.action == cli::Action::filter_batch);
  CHECK_FALSE(many.batch.write.quality.has_value());
  CHECK(many.batch.write.compression == "deflate");
  CHECK_FALSE(many.batch.strip_metadata);
  CHECK(many.batch.auto_orient);
}

// ---- issue 49: no silent loss in PNM, PNG's ICC profile and WebP's transparent pixels ---------

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
  for (const auto& [path, channels] : std::vector<std::pair<std::string, int>>{
           {"x.pgm", 1}, {"x.ppm", 3}, {"x.pnm", 1}, {"x.pnm", 3}, {"x.pbm", 1}, {"x.PGM", 1}})
    CHECK_MESSAGE(refusal(path, CV_8U, channels).empty(), path, " ", channels);
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
  for (const auto& [input, out, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {sample("coffee.png"), "colour.pgm", ".pgm cannot hold 3 channels (colour)"},
           {sample("camera.png"), "gray.ppm", ".ppm cannot hold 1 channel (gray)"},
           {sample("coffee.png"), "colour.pbm", ".pbm cannot hold 3 channels"}}) {
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
  const auto result = run_cuconv({sample("astronaut.png"), dir.file("out.png"), "--filter", "gauss5", "--variant",
                                  "opencv"});
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
  const auto result = run_cuconv({dir.file("in.png"), dir.file("out.webp"), "--filter", "1x1:1", "--variant", "opencv"});
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

TEST_CASE("encoder_options_for: each output format keeps the options it takes (a mixed batch)") {
  // Before issue 49 a batch's --quality 90 refused every PNG in it; the engine now writes each
  // file with the options of its own format.
  WriteOptions asked;
  asked.quality = 90;
  asked.compression = "9";
  const WriteOptions png = encoder_options_for("a.png", asked);
  CHECK_FALSE(png.quality.has_value());
  CHECK(png.compression == "9");
  CHECK_NOTHROW(check_encoder_options("a.png", png));
  const WriteOptions jpeg = encoder_options_for("a.JPG", asked);
  CHECK(jpeg.quality == 90);
  CHECK(jpeg.compression.empty());
  CHECK_NOTHROW(check_encoder_options("a.jpg", jpeg));
  const WriteOptions tiff = encoder_options_for("a.tif", asked);  // a level is no TIFF codec
  CHECK_FALSE(tiff.quality.has_value());
  CHECK(tiff.compression.empty());
  asked.compression = "lzw";
  CHECK(encoder_options_for("a.tif", asked).compression == "lzw");
  CHECK(encoder_options_for("a.png", asked).compression.empty());
  CHECK(encoder_options_for("a.webp", asked).quality == 90);
  CHECK(encoder_options_for("a.bmp", asked).compression.empty());
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
constexpr FormatCase kRoundTrips[] = {
    {"pgm", CV_8U, 1},  {"pgm", CV_16U, 1}, {"ppm", CV_8U, 3},  {"ppm", CV_16U, 3}, {"pnm", CV_8U, 1},
    {"exr", CV_32F, 1}, {"exr", CV_32F, 3}, {"exr", CV_32F, 4}, {"pfm", CV_32F, 1}, {"pfm", CV_32F, 3},
    {"bmp", CV_8U, 1},  {"bmp", CV_8U, 3},  {"bmp", CV_8U, 4},  {"webp", CV_8U, 3}, {"webp", CV_8U, 4}};

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
  const auto r = run_cuconv({sample("camera.png"), out, "--filter", "sobel-x", "--depth", "16s", "--variant", "opencv"});
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

// Exit 1 ("internal error", README "Exit codes") is what an exception cuconv does not classify
// gives. The one such exception reachable from outside: host memory running out while filtering
// (OpenCV's allocation failure), under an address-space cap (ulimit -v) that lets a 400 MB image
// decode but not its 400 MB result. AddressSanitizer reserves terabytes up front, so under it the
// cap cannot work: the case is skipped there (doctest counts it as skipped).
TEST_CASE("cuconv: an exception it does not classify exits 1 with 'internal error', leaving no output") {
  // Out of memory is classified now (exit 3 or 4, docs/usage.md); an exception nothing classifies
  // is planted through the session's file access, the seam a served command uses.
  struct ThrowingFiles final : engine::Files {
    engine::OpenedFile open_input(const std::string& path) override { return engine::local_files().open_input(path); }
    engine::FileKind kind(const std::string& path, bool follow) override { return engine::local_files().kind(path, follow); }
    bool same_file(const std::string& a, const std::string& b) override { return engine::local_files().same_file(a, b); }
    engine::FileStatus status(const std::string& path) override { return engine::local_files().status(path); }
    std::vector<std::string> list_directory(const std::string& p) override { return engine::local_files().list_directory(p); }
    void make_directories(const std::string& p) override { engine::local_files().make_directories(p); }
    bool write_output(const std::string&, std::span<const unsigned char>, bool) override {
      throw std::runtime_error("planted: a failure no layer classifies");
    }
    void remove(const std::string&) noexcept override {}
  } files;
  TempDir dir;
  const std::string out = dir.file("out.png");
  const std::string err_path = dir.file("err.txt");
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(err_fd >= 0);
  cli::Session session;
  session.err_fd = err_fd;
  session.files = &files;
  const int code = cli::run_command({"cuconv", sample("camera.png"), out, "--filter", "gauss3", "--variant", "opencv"},
                                    session);
  session.logger.reset();
  ::close(err_fd);
  const std::string err = cuconv::test::read_file(err_path);
  INFO(err);
  CHECK(code == 1);
  CHECK(err.find("internal error: planted") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}
