// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpora of the image-file fuzz targets from samples/ (built with them by
// tests/fuzz/CMakeLists.txt; not a fuzzer). Each seed is a small real file (a few KiB: libFuzzer
// runs with -max_len=4096), so the fuzzer starts from every structure the parsers walk:
//   corpus_image_header: PNG, baseline and progressive JPEG, TIFF (II and MM), BMP (gray, colour);
//   corpus_jpeg_markers: JPEGs with and without EXIF and XMP APP1, an Adobe APP14, progressive;
//   corpus_metadata: JPEG with EXIF (Orientation 6) and XMP, TIFF, PNG, WebP.
// Usage: make_seeds SAMPLES_DIR TESTS_FUZZ_DIR
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<unsigned char>;
namespace fs = std::filesystem;

Bytes encode(const char* extension, const cv::Mat& image, const std::vector<int>& params = {}) {
  Bytes out;
  if (!cv::imencode(extension, image, out, params)) throw std::runtime_error(std::string("cannot encode ") + extension);
  return out;
}

void write(const fs::path& dir, const std::string& name, const Bytes& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  std::printf("%s/%s: %zu bytes\n", dir.filename().c_str(), name.c_str(), bytes.size());
}

/// A JPEG APP segment (marker, length, body).
Bytes app_segment(int marker, const Bytes& body) {
  const std::size_t length = body.size() + 2;
  Bytes s = {0xFF, static_cast<unsigned char>(marker), static_cast<unsigned char>(length >> 8),
             static_cast<unsigned char>(length & 0xFF)};
  s.insert(s.end(), body.begin(), body.end());
  return s;
}

/// `jpeg` with `segment` right after its SOI.
Bytes with_segment(const Bytes& jpeg, const Bytes& segment) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);
  out.insert(out.end(), segment.begin(), segment.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

Bytes exif_body(int orientation) {
  Bytes body = {'E', 'x', 'i', 'f', 0, 0};
  const Bytes tiff = {
      'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, static_cast<unsigned char>(orientation),
      0,   0,   0,  0, 0, 0, 0};
  body.insert(body.end(), tiff.begin(), tiff.end());
  return body;
}

Bytes xmp_body() {
  const std::string ns = std::string("http://ns.adobe.com/xap/1.0/") + '\0';
  const std::string packet =
      "<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?><x:xmpmeta xmlns:x=\"adobe:ns:meta/\">"
      "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><rdf:Description rdf:about=\"\" "
      "xmlns:dc=\"http://purl.org/dc/elements/1.1/\" dc:format=\"seed\"/></rdf:RDF></x:xmpmeta><?xpacket end=\"w\"?>";
  Bytes body(ns.begin(), ns.end());
  body.insert(body.end(), packet.begin(), packet.end());
  return body;
}

Bytes adobe_body(int transform) {
  return {'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, static_cast<unsigned char>(transform)};
}

/// A TIFF with big-endian byte order: OpenCV writes II, so the IFD is rewritten by hand for a
/// one-strip 8-bit gray image.
Bytes big_endian_tiff(const cv::Mat& gray) {
  Bytes out = {'M', 'M', 0, 42, 0, 0, 0, 8};
  const auto u16 = [&](unsigned v) {
    out.push_back(static_cast<unsigned char>(v >> 8));
    out.push_back(static_cast<unsigned char>(v));
  };
  const auto u32 = [&](unsigned v) {
    u16(v >> 16);
    u16(v & 0xFFFF);
  };
  const unsigned entries = 8;
  const unsigned data_offset = 8 + 2 + entries * 12 + 4;
  const auto entry = [&](unsigned tag, unsigned type, unsigned value) {
    u16(tag);
    u16(type);
    u32(1);
    if (type == 3) {
      u16(value);
      u16(0);
    } else {
      u32(value);
    }
  };
  u16(entries);
  entry(256, 3, static_cast<unsigned>(gray.cols));     // ImageWidth
  entry(257, 3, static_cast<unsigned>(gray.rows));     // ImageLength
  entry(258, 3, 8);                                    // BitsPerSample
  entry(259, 3, 1);                                    // Compression: none
  entry(262, 3, 1);                                    // Photometric: BlackIsZero
  entry(273, 4, data_offset);                          // StripOffsets
  entry(278, 3, static_cast<unsigned>(gray.rows));     // RowsPerStrip
  entry(279, 4, static_cast<unsigned>(gray.total()));  // StripByteCounts
  u32(0);
  for (int r = 0; r < gray.rows; ++r) out.insert(out.end(), gray.ptr(r), gray.ptr(r) + gray.cols);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds SAMPLES_DIR TESTS_FUZZ_DIR\n");
    return 2;
  }
  const fs::path samples = argv[1];
  const fs::path out = argv[2];
  const cv::Mat crop = cv::imread((samples / "camera_crop_40x48.png").string(), cv::IMREAD_UNCHANGED);
  cv::Mat colour;
  cv::resize(cv::imread((samples / "coffee.png").string(), cv::IMREAD_COLOR), colour, cv::Size(16, 12), 0, 0,
             cv::INTER_AREA);
  if (crop.empty() || colour.empty()) {
    std::fprintf(stderr, "make_seeds: cannot read the samples in %s\n", samples.c_str());
    return 1;
  }
  cv::Mat small_gray = crop(cv::Rect(0, 0, 24, 20)).clone();

  const Bytes jpeg = encode(".jpg", crop, {cv::IMWRITE_JPEG_QUALITY, 60});
  const Bytes progressive = encode(".jpg", colour, {cv::IMWRITE_JPEG_QUALITY, 60, cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  const Bytes colour_jpeg = encode(".jpg", colour, {cv::IMWRITE_JPEG_QUALITY, 60});
  const Bytes exif_jpeg = with_segment(colour_jpeg, app_segment(0xE1, exif_body(6)));
  const Bytes xmp_jpeg = with_segment(exif_jpeg, app_segment(0xE1, xmp_body()));

  const fs::path headers = out / "corpus_image_header";
  write(headers, "crop.png", encode(".png", crop));
  write(headers, "colour16.png", encode(".png", [&] {
          cv::Mat w;
          colour.convertTo(w, CV_16U, 257);
          return w;
        }()));
  write(headers, "crop.jpg", jpeg);
  write(headers, "progressive.jpg", progressive);
  write(headers, "little.tif", encode(".tif", small_gray, {cv::IMWRITE_TIFF_COMPRESSION, 1}));
  write(headers, "colour.tif", encode(".tif", colour, {cv::IMWRITE_TIFF_COMPRESSION, 1}));
  write(headers, "big.tif", big_endian_tiff(small_gray));
  write(headers, "gray.bmp", encode(".bmp", small_gray));
  write(headers, "colour.bmp", encode(".bmp", colour));

  const fs::path markers = out / "corpus_jpeg_markers";
  write(markers, "crop.jpg", jpeg);
  write(markers, "progressive.jpg", progressive);
  write(markers, "exif-xmp.jpg", xmp_jpeg);
  write(markers, "adobe-rgb.jpg", with_segment(colour_jpeg, app_segment(0xEE, adobe_body(0))));

  const fs::path metadata = out / "corpus_metadata";
  write(metadata, "exif-xmp.jpg", xmp_jpeg);
  write(metadata, "colour.tif", encode(".tif", colour, {cv::IMWRITE_TIFF_COMPRESSION, 1}));
  write(metadata, "crop.png", encode(".png", crop));
  write(metadata, "colour.webp", encode(".webp", colour, {cv::IMWRITE_WEBP_QUALITY, 101}));
  return 0;
}
