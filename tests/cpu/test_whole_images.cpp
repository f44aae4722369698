// SPDX-License-Identifier: Apache-2.0
// Whole images or none (issue 62): every TIFF layout libtiff can hold reads sample for sample (the
// files written here with libtiff itself, the values checked one by one), and a file whose data
// cannot give every sample its header promises is refused, exit 3, naming the file and the defect.
#include "adversarial_files.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <tiffio.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using cuconv::test::run_cuconv;
using cuconv::test::TempDir;
using cuconv::test::crafted::little_endian;
using cuconv::test::crafted::patch_tiff_entry;

/// How a test TIFF is laid out.
struct Layout {
  int depth = CV_8U;  ///< CV_8U, CV_16U, CV_32F; 1-bit files are `bilevel`
  int channels = 1;
  bool planar = false;
  bool tiled = false;
  int compression = COMPRESSION_NONE;
  bool bilevel = false;
  int photometric = -1;  ///< -1: gray or RGB by the channel count
};

constexpr int kWidth = 37, kHeight = 29;  // neither a multiple of the 16-pixel tiles nor of the strips

/// Values that differ in every sample and channel, in the file's RGB(A) order: channel c of
/// pixel (r, x) is f(r, x, c), spread over the depth's range.
cv::Mat rgb_values(const Layout& layout) {
  cv::Mat image(kHeight, kWidth, CV_MAKETYPE(layout.depth, layout.channels));
  for (int r = 0; r < kHeight; ++r)
    for (int x = 0; x < kWidth; ++x)
      for (int c = 0; c < layout.channels; ++c) {
        const int v = (r * 131 + x * 17 + c * 71) % 251;
        const int i = x * layout.channels + c;
        if (layout.bilevel)
          image.ptr<std::uint8_t>(r)[i] = (r + x) % 3 == 0 ? 255 : 0;
        else if (layout.depth == CV_8U)
          image.ptr<std::uint8_t>(r)[i] = static_cast<std::uint8_t>(v);
        else if (layout.depth == CV_16U)
          image.ptr<std::uint16_t>(r)[i] = static_cast<std::uint16_t>(v * 257 + c + 1);
        else
          image.ptr<float>(r)[i] = static_cast<float>(v) / 7.0f - 3.25f;
      }
  return image;
}

/// Writes `rgb` (the file's sample order) with libtiff as `layout` says.
void write_tiff(const std::string& path, const cv::Mat& rgb, const Layout& layout) {
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  REQUIRE(tif != nullptr);
  const int bits = layout.bilevel ? 1 : static_cast<int>(rgb.elemSize1()) * 8;
  const int channels = rgb.channels();
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(rgb.cols));
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(rgb.rows));
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(channels));
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(bits));
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, layout.depth == CV_32F ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, layout.planar ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC,
               layout.photometric >= 0 ? layout.photometric
               : channels == 1         ? PHOTOMETRIC_MINISBLACK
                                       : PHOTOMETRIC_RGB);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, layout.compression);
  if (channels == 4) {
    const std::uint16_t extra[] = {EXTRASAMPLE_UNASSALPHA};
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, extra);
  }
  if (layout.tiled) {
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, 16u);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, 16u);
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 5u);
  }
  // One plane (the whole image when contiguous) as the file stores it, 1-bit rows packed.
  const int planes = layout.planar ? channels : 1;
  const int in_plane = channels / planes;
  const std::size_t row_bytes = layout.bilevel ? (rgb.cols + 7) / 8 : rgb.cols * rgb.elemSize1() * in_plane;
  std::vector<std::vector<unsigned char>> plane_rows(planes, std::vector<unsigned char>(row_bytes * rgb.rows, 0));
  for (int p = 0; p < planes; ++p)
    for (int r = 0; r < rgb.rows; ++r)
      for (int x = 0; x < rgb.cols; ++x)
        for (int s = 0; s < in_plane; ++s) {
          const int c = p * in_plane + s;
          unsigned char* row = plane_rows[p].data() + r * row_bytes;
          if (layout.bilevel) {
            if (rgb.ptr<std::uint8_t>(r)[x] != 0) row[x / 8] |= static_cast<unsigned char>(0x80 >> (x % 8));
            continue;
          }
          const std::size_t size = rgb.elemSize1();
          std::memcpy(row + (x * in_plane + s) * size, rgb.ptr(r) + (x * channels + c) * size, size);
        }
  if (layout.tiled) {
    std::vector<unsigned char> tile(static_cast<std::size_t>(TIFFTileSize(tif)));
    const std::size_t tile_row = static_cast<std::size_t>(TIFFTileRowSize(tif));
    for (int p = 0; p < planes; ++p)
      for (int y = 0; y < rgb.rows; y += 16)
        for (int x = 0; x < rgb.cols; x += 16) {
          std::fill(tile.begin(), tile.end(), 0);
          const std::size_t offset = layout.bilevel ? x / 8 : x * rgb.elemSize1() * in_plane;
          for (int r = 0; r < 16 && y + r < rgb.rows; ++r)
            std::memcpy(tile.data() + r * tile_row, plane_rows[p].data() + (y + r) * row_bytes + offset,
                        std::min(tile_row, row_bytes - offset));
          REQUIRE(TIFFWriteTile(tif, tile.data(), x, y, 0, static_cast<std::uint16_t>(p)) > 0);
        }
  } else {
    for (int p = 0; p < planes; ++p)
      for (int r = 0; r < rgb.rows; ++r)
        REQUIRE(TIFFWriteScanline(tif, plane_rows[p].data() + r * row_bytes, r, static_cast<std::uint16_t>(p)) == 1);
  }
  TIFFClose(tif);
}

/// `rgb` in OpenCV's BGR(A) order, as read_image returns it.
cv::Mat bgr_order(const cv::Mat& rgb) {
  if (rgb.channels() < 3) return rgb;
  cv::Mat bgr(rgb.size(), rgb.type());
  const int swap[] = {0, 2, 1, 1, 2, 0, 3, 3};
  cv::mixChannels(&rgb, 1, &bgr, 1, swap, static_cast<std::size_t>(rgb.channels()));
  return bgr;
}

/// How many samples of `got` differ from `expected` (bit for bit); -1 when type or size differ.
long long differing_samples(const cv::Mat& got, const cv::Mat& expected) {
  if (got.type() != expected.type() || got.size() != expected.size()) return -1;
  long long count = 0;
  const std::size_t size = got.elemSize1();
  for (int r = 0; r < got.rows; ++r)
    for (int i = 0; i < got.cols * got.channels(); ++i)
      count += std::memcmp(got.ptr(r) + i * size, expected.ptr(r) + i * size, size) != 0;
  return count;
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

/// The message read_image refuses `path` with; empty when it reads the file.
std::string refusal(const std::string& path) {
  try {
    static_cast<void>(cuconv::read_image(path));
  } catch (const cuconv::Error& e) {
    CHECK(e.kind() == cuconv::ErrorKind::bad_input);
    return e.what();
  }
  return {};
}

/// A palette BMP of `width` x `height`, RLE8-compressed `data` (RLE4 where `bits` is 4), palette
/// entry i gray i (i * 17 for RLE4); a negative `height` claims top-down rows.
std::string rle8_bmp(int width, int height, const std::string& data, int bits = 8) {
  std::string palette;
  const int colours = 1 << bits;
  for (int i = 0; i < colours; ++i) palette += std::string(3, static_cast<char>(i * 255 / (colours - 1))) + '\0';
  const std::uint64_t pixels_at = 14 + 40 + palette.size();
  std::string file =
      "BM" + little_endian(pixels_at + data.size(), 4) + little_endian(0, 4) + little_endian(pixels_at, 4);
  file += little_endian(40, 4) + little_endian(static_cast<std::uint32_t>(width), 4) +
          little_endian(static_cast<std::uint32_t>(height), 4) + little_endian(1, 2) + little_endian(bits, 2) +
          little_endian(bits == 8 ? 1 : 2, 4) /* BI_RLE8, BI_RLE4 */ + little_endian(data.size(), 4) +
          little_endian(2835, 4) + little_endian(2835, 4) + little_endian(colours, 4) + little_endian(0, 4);
  return file + palette + data;
}

/// RLE8 data: `rows` rows of 8 pixels, row y one run of value 10 (y + 1), each ended by an
/// end-of-line escape, then the end-of-bitmap escape when `end`.
std::string rle8_rows(int rows, bool end) {
  std::string data;
  for (int y = 0; y < rows; ++y) data += std::string{8, static_cast<char>(10 * (y + 1)), 0, 0};
  if (end) data += std::string{0, 1};
  return data;
}

}  // namespace

TEST_CASE("whole images: every TIFF layout libtiff writes reads back sample for sample") {
  TempDir dir;
  int checked = 0;
  for (const int compression : {COMPRESSION_NONE, COMPRESSION_LZW, COMPRESSION_ADOBE_DEFLATE})
    for (const bool tiled : {false, true})
      for (const bool planar : {false, true})
        for (const int depth : {CV_8U, CV_16U, CV_32F})
          for (const int channels : {1, 3, 4}) {
            if (planar && channels == 1) continue;  // one sample: planar and contiguous are the same bytes
            const Layout layout{depth, channels, planar, tiled, compression};
            CAPTURE(compression);
            CAPTURE(tiled);
            CAPTURE(planar);
            CAPTURE(depth);
            CAPTURE(channels);
            const std::string path = dir.file("layout.tif");
            const cv::Mat rgb = rgb_values(layout);
            write_tiff(path, rgb, layout);
            std::string decoder;
            const cv::Mat image = cuconv::read_image(path, {}, decoder);
            CHECK(decoder == "libtiff");
            CHECK(differing_samples(image, bgr_order(rgb)) == 0);
            ++checked;
          }
  CHECK(checked == 3 * 2 * 45 / 3);
}

TEST_CASE("whole images: a planar 16-bit RGB TIFF keeps all three planes, in process and through the CLI") {
  // The file: OpenCV 4.6 left two thirds of its samples zero, exit 0.
  TempDir dir;
  const Layout layout{CV_16U, 3, true, false, COMPRESSION_NONE};
  const cv::Mat rgb = rgb_values(layout);
  write_tiff(dir.file("planar.tif"), rgb, layout);
  CHECK(differing_samples(cuconv::read_image(dir.file("planar.tif")), bgr_order(rgb)) == 0);
  // box1 filter: the output is the input, written as PNG and read back by OpenCV.
  const auto result = run_cuconv({dir.file("planar.tif"), dir.file("out.png"), "-f", "1x1:1"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(differing_samples(cv::imread(dir.file("out.png"), cv::IMREAD_UNCHANGED), bgr_order(rgb)) == 0);
}

TEST_CASE("whole images: bilevel, white-is-zero and palette TIFFs read as their pixels") {
  TempDir dir;
  const std::string path = dir.file("bilevel.tif");
  for (const bool tiled : {false, true})
    for (const int photometric : {PHOTOMETRIC_MINISBLACK, PHOTOMETRIC_MINISWHITE}) {
      CAPTURE(tiled);
      CAPTURE(photometric);
      Layout layout{CV_8U, 1, false, tiled, COMPRESSION_NONE, true, photometric};
      const cv::Mat bits = rgb_values(layout);
      write_tiff(path, bits, layout);
      // White is 255 whichever bit value the file gives it.
      cv::Mat expected = bits.clone();
      if (photometric == PHOTOMETRIC_MINISWHITE) cv::bitwise_not(expected, expected);
      CHECK(differing_samples(cuconv::read_image(path), expected) == 0);
      layout.bilevel = false;
      write_tiff(path, rgb_values(layout), layout);
      cv::Mat inverted;
      cv::bitwise_not(rgb_values(layout), inverted);
      CHECK(differing_samples(cuconv::read_image(path),
                              photometric == PHOTOMETRIC_MINISWHITE ? inverted : rgb_values(layout)) == 0);
    }
  // A palette image: 8-bit indices into a 16-bit colour map, read as 8-bit BGR.
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  REQUIRE(tif != nullptr);
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 4u);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 2u);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_PALETTE);
  std::vector<std::uint16_t> red(256), green(256), blue(256);
  for (int i = 0; i < 256; ++i) {
    red[i] = static_cast<std::uint16_t>(i * 257);
    green[i] = static_cast<std::uint16_t>((255 - i) * 257);
    blue[i] = static_cast<std::uint16_t>((i * 3 % 256) * 257);
  }
  TIFFSetField(tif, TIFFTAG_COLORMAP, red.data(), green.data(), blue.data());
  const std::uint8_t indices[2][4] = {{0, 1, 2, 3}, {100, 150, 200, 250}};
  for (std::uint32_t r = 0; r < 2; ++r)
    REQUIRE(TIFFWriteScanline(tif, const_cast<std::uint8_t*>(indices[r]), r, 0) == 1);
  TIFFClose(tif);
  const cv::Mat image = cuconv::read_image(path);
  REQUIRE(image.type() == CV_8UC3);
  for (int r = 0; r < 2; ++r)
    for (int x = 0; x < 4; ++x) {
      const int i = indices[r][x];
      CHECK(image.at<cv::Vec3b>(r, x) == cv::Vec3b(static_cast<std::uint8_t>(i * 3 % 256),
                                                   static_cast<std::uint8_t>(255 - i), static_cast<std::uint8_t>(i)));
    }
}

TEST_CASE("whole images: TIFF sample types cuconv does not filter are refused by name") {
  TempDir dir;
  const std::string path = dir.file("type.tif");
  const auto write = [&](int bits, int format) {
    TIFF* tif = TIFFOpen(path.c_str(), "w");
    REQUIRE(tif != nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 4u);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 2u);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, format);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    std::vector<unsigned char> row(4 * bits / 8, 1);
    for (std::uint32_t r = 0; r < 2; ++r) REQUIRE(TIFFWriteScanline(tif, row.data(), r, 0) == 1);
    TIFFClose(tif);
  };
  write(32, SAMPLEFORMAT_UINT);
  CHECK(refusal(path).find("32-bit unsigned integer") != std::string::npos);
  write(32, SAMPLEFORMAT_INT);
  CHECK(refusal(path).find("unsupported pixel depth 32S") != std::string::npos);
  write(64, SAMPLEFORMAT_IEEEFP);
  CHECK(refusal(path).find("unsupported pixel depth 64F") != std::string::npos);
  write(16, SAMPLEFORMAT_IEEEFP);
  CHECK(refusal(path).find("16-bit float") != std::string::npos);
  write(12, SAMPLEFORMAT_UINT);
  CHECK(refusal(path).find("12-bit unsigned integer") != std::string::npos);
}

TEST_CASE("whole images: TIFF strips and tiles that hold fewer bytes than their rows need are refused") {
  TempDir dir;
  const std::string path = dir.file("short.tif");
  {
    // The file: one strip, StripByteCounts 10 of the 1073 its 37x29 gray pixels need.
    std::string file = cuconv::test::crafted::tiff_with_samples(37, 29, 1);
    write_bytes(path, file);
    REQUIRE(refusal(path).empty());  // whole, it reads
    patch_tiff_entry(file, 279, 0, 10);
    write_bytes(path, file);
    const std::string message = refusal(path);
    CHECK(message.find(path) == 0);
    CHECK(message.find("truncated or corrupt TIFF") != std::string::npos);
    CHECK(message.find("StripByteCounts") != std::string::npos);
  }
  // `layout` written whole (and read), then entry `index` of byte-count tag `tag` set to `count`.
  const auto refused_with = [&](const Layout& layout, int tag, int index, std::uint32_t count) {
    write_tiff(path, rgb_values(layout), layout);
    REQUIRE(refusal(path).empty());
    std::string file = cuconv::test::read_file(path);
    patch_tiff_entry(file, tag, index, count);
    write_bytes(path, file);
    return refusal(path);
  };
  constexpr int kStripByteCounts = 279, kTileByteCounts = 325;
  CHECK(refused_with({CV_8U, 3, false, false, COMPRESSION_NONE}, kStripByteCounts, 2, 10)
            .find("strip 2 holds 10 bytes, 555 needed") != std::string::npos);
  // LZW data cut: the codec runs out of data.
  CHECK(refused_with({CV_16U, 3, true, false, COMPRESSION_LZW}, kStripByteCounts, 7, 20)
            .find("truncated or corrupt TIFF") != std::string::npos);
  CHECK(refused_with({CV_8U, 1, false, true, COMPRESSION_NONE}, kTileByteCounts, 5, 100)
            .find("tile 5 holds 100 bytes, 256 needed") != std::string::npos);
}

TEST_CASE("whole images: RLE8 and RLE4 BMPs that do not cover their rows are refused, whole ones read") {
  TempDir dir;
  const std::string path = dir.file("rle.bmp");
  write_bytes(path, rle8_bmp(8, 4, rle8_rows(4, true)));
  const cv::Mat image = cuconv::read_image(path);
  REQUIRE(image.type() == CV_8UC1);  // a gray palette reads as gray
  REQUIRE(image.rows == 4);
  // Bottom-up: the first row of the data is the last of the image.
  CHECK(image.at<std::uint8_t>(3, 0) == 10);
  CHECK(image.at<std::uint8_t>(0, 7) == 40);
  // The file: a negative height (top-down rows), which RLE compression may not have.
  write_bytes(path, rle8_bmp(8, -4, rle8_rows(4, true)));
  CHECK(refusal(path).find("negative height") != std::string::npos);
  // The end-of-bitmap escape after 2 of the 4 rows.
  write_bytes(path, rle8_bmp(8, 4, rle8_rows(2, true)));
  CHECK(refusal(path).find("2 of its 4 rows") != std::string::npos);
  // The file ends before the end-of-bitmap escape.
  write_bytes(path, rle8_bmp(8, 4, rle8_rows(3, false)));
  CHECK(refusal(path).find("the RLE data ends") != std::string::npos);
  // RLE4, each row 8 pixels in one absolute run (indices 1 to 8, two to a byte).
  std::string rle4;
  for (int y = 0; y < 4; ++y) rle4 += std::string{0, 8, 0x12, 0x34, 0x56, 0x78, 0, 0};
  write_bytes(path, rle8_bmp(8, 4, rle4 + std::string{0, 1}, 4));
  const cv::Mat four = cuconv::read_image(path);
  REQUIRE(four.type() == CV_8UC1);
  CHECK(four.at<std::uint8_t>(2, 7) == 8 * 17);
  // Cut inside the last absolute run.
  write_bytes(path, rle8_bmp(8, 4, rle4.substr(0, rle4.size() - 4), 4));
  CHECK(refusal(path).find("the RLE data ends") != std::string::npos);
}

TEST_CASE("whole images: PNM, PFM, WebP, BMP, Radiance and Sun raster files cut short are refused by their decoders") {
  TempDir dir;
  const Layout layout{CV_8U, 3};
  const cv::Mat bgr = bgr_order(rgb_values(layout));
  cv::Mat gray, floats;
  cv::extractChannel(bgr, gray, 0);
  bgr.convertTo(floats, CV_32F, 1.0 / 255);
  for (const auto& [name, image] : {std::pair<std::string, cv::Mat>{"cut.pgm", gray},
                                    {"cut.ppm", bgr},
                                    {"cut.pfm", floats},
                                    {"cut.webp", bgr},
                                    {"cut.bmp", bgr},
                                    {"cut.hdr", floats},
                                    {"cut.ras", bgr}}) {
    const std::string& file_name = name;  // clang 14 cannot capture a structured binding (CAPTURE does)
    CAPTURE(file_name);
    const std::string path = dir.file(name);
    REQUIRE(cv::imwrite(path, image));
    REQUIRE(refusal(path).empty());  // whole, it reads
    const std::string bytes = cuconv::test::read_file(path);
    write_bytes(path, bytes.substr(0, bytes.size() * 9 / 10));
    CHECK(refusal(path).find("cannot decode image") != std::string::npos);
  }
}

TEST_CASE("whole images: cuconv exits 3 on a short TIFF strip and a top-down RLE BMP, naming the file and why") {
  TempDir dir;
  std::string tiff = cuconv::test::crafted::tiff_with_samples(37, 29, 1);
  patch_tiff_entry(tiff, 279, 0, 10);
  write_bytes(dir.file("crafted.tif"), tiff);
  write_bytes(dir.file("crafted.bmp"), rle8_bmp(8, -4, rle8_rows(4, true)));
  for (const auto& [input, why] : {std::pair<std::string, std::string>{"crafted.tif", "StripByteCounts"},
                                   std::pair<std::string, std::string>{"crafted.bmp", "negative height"}}) {
    const std::string& file_name = input;  // clang 14 cannot capture a structured binding (CAPTURE does)
    CAPTURE(file_name);
    const auto result = run_cuconv({dir.file(input), dir.file("out.png"), "-f", "box3"});
    CHECK(result.exit_code == 3);
    CHECK(result.err.find(dir.file(input) + ": cannot decode image: truncated or corrupt") != std::string::npos);
    CHECK(result.err.find(why) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("out.png")));
  }
}
