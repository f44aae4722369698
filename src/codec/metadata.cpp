// SPDX-License-Identifier: Apache-2.0
// EXIF, ICC and XMP from input files to output files with libexiv2, and --auto-orient. EXIF
// travels as the TIFF-structured block exiv2 encodes, so the public header needs no exiv2 type.
#include "codec/metadata.hpp"

#include "codec/jpeg_markers.hpp"

#include <cuconv/error.hpp>

#include <exiv2/exiv2.hpp>
#include <opencv2/core.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

namespace cuconv {

namespace {

constexpr const char* kOrientationKey = "Exif.Image.Orientation";

/// Serialises the XMP toolkit, which is not thread-safe on its own (batch mode reads and writes
/// metadata on several threads).
std::mutex xmp_mutex;
void lock_xmp(void*, bool lock) {
  if (lock)
    xmp_mutex.lock();
  else
    xmp_mutex.unlock();
}

/// exiv2's one-time set-up: the XMP toolkit must be initialised before threads use it, and its
/// own warnings (unknown tags, odd makernotes) are not cuconv's to print.
void init_exiv2() {
  static std::once_flag once;
  std::call_once(once, [] {
    Exiv2::XmpParser::initialize(lock_xmp, nullptr);
    Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);
  });
}

Exiv2::ExifData decode_exif(const std::vector<unsigned char>& blob) {
  Exiv2::ExifData exif;
  if (!blob.empty()) Exiv2::ExifParser::decode(exif, blob.data(), static_cast<std::uint32_t>(blob.size()));
  return exif;
}

std::vector<unsigned char> encode_exif(const Exiv2::ExifData& exif) {
  Exiv2::Blob blob;
  if (!exif.empty()) Exiv2::ExifParser::encode(blob, Exiv2::littleEndian, exif);
  return {blob.begin(), blob.end()};
}

/// PNG's CRC-32 (ISO 3309, the one zlib computes) of `size` bytes, bit by bit: only the one
/// rewritten chunk needs it.
std::uint32_t png_crc(const unsigned char* data, std::size_t size) {
  std::uint32_t crc = 0xffffffffU;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320U & (0U - (crc & 1U)));
  }
  return crc ^ 0xffffffffU;
}

std::uint32_t read_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

void append_be32(std::vector<unsigned char>& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(value >> shift));
}

constexpr double kInchesPerMetre = 1 / 0.0254;

/// A TIFF's X/YResolution in dots per inch (ResolutionUnit 2: inches, the default, 3: centimetres);
/// {0, 0} when it has none or counts in no unit (an aspect ratio only).
std::pair<double, double> tiff_density(const Exiv2::ExifData& exif) {
  const auto x = exif.findKey(Exiv2::ExifKey("Exif.Image.XResolution"));
  const auto y = exif.findKey(Exiv2::ExifKey("Exif.Image.YResolution"));
  if (x == exif.end() || y == exif.end() || x->count() == 0 || y->count() == 0) return {0, 0};
  const auto unit = exif.findKey(Exiv2::ExifKey("Exif.Image.ResolutionUnit"));
  const long u = unit == exif.end() || unit->count() == 0 ? 2 : unit->toLong();
  if (u != 2 && u != 3) return {0, 0};
  const double scale = u == 3 ? 2.54 : 1.0;
  return {x->toFloat() * scale, y->toFloat() * scale};
}

/// A PNG's pHYs chunk in dots per inch; {0, 0} without one, or when it gives an aspect ratio only.
std::pair<double, double> png_density(const std::vector<unsigned char>& png) {
  for (std::size_t pos = 8; pos + 12 <= png.size();) {
    const std::size_t length = read_be32(&png[pos]);
    if (length > png.size() - pos - 12 || std::memcmp(&png[pos + 4], "IDAT", 4) == 0) break;
    if (std::memcmp(&png[pos + 4], "pHYs", 4) == 0 && length == 9 && png[pos + 16] == 1)
      return {read_be32(&png[pos + 8]) / kInchesPerMetre, read_be32(&png[pos + 12]) / kInchesPerMetre};
    pos += 12 + length;
  }
  return {0, 0};
}

/// A JPEG's JFIF density (its APP0 right after SOI) in dots per inch; {0, 0} without one or in
/// no unit (JFIF units 1: inches, 2: centimetres).
std::pair<double, double> jfif_density(const std::vector<unsigned char>& jpeg) {
  if (jpeg.size() < 18 || jpeg[2] != 0xFF || jpeg[3] != 0xE0 || std::memcmp(&jpeg[6], "JFIF", 5) != 0) return {0, 0};
  const int unit = jpeg[13];
  if (unit != 1 && unit != 2) return {0, 0};
  const double scale = unit == 2 ? 2.54 : 1.0;
  return {((jpeg[14] << 8) | jpeg[15]) * scale, ((jpeg[16] << 8) | jpeg[17]) * scale};
}

/// The blocks `image` (read already, perhaps only in part) holds, each taken on its own: one that
/// cannot be taken is left out with a line in `metadata.warnings`.
ImageMetadata take_blocks(Exiv2::Image& image) {
  ImageMetadata metadata;
  try {
    Exiv2::ExifData exif = image.exifData();
    // The TIFF reader (codec::decode_tiff) applies a TIFF's Orientation itself: the pixels
    // read_image returns are upright already, so the tag carried on must say so.
    if (image.imageType() == Exiv2::ImageType::tiff) {
      const auto orientation = exif.findKey(Exiv2::ExifKey(kOrientationKey));
      if (orientation != exif.end()) orientation->setValue("1");
    }
    // The block exiv2 would put in a JPEG: a TIFF input's own layout tags (size, strips) are left out.
    metadata.exif = encode_exif(exif);
  } catch (const Exiv2::AnyError& e) {
    metadata.warnings.push_back(std::string("EXIF dropped: ") + e.what());
  }
  if (image.iccProfileDefined()) {
    const Exiv2::DataBuf* icc = image.iccProfile();
    metadata.icc.assign(icc->pData_, icc->pData_ + icc->size_);
    if (const std::string defect = codec::icc_profile_defect(metadata.icc); !defect.empty()) {
      metadata.icc.clear();
      metadata.warnings.push_back(codec::icc_dropped_warning(defect));
    }
  }
  try {
    metadata.xmp = image.xmpPacket();
  } catch (const Exiv2::AnyError& e) {
    metadata.warnings.push_back(std::string("XMP dropped: ") + e.what());
  }
  return metadata;
}

/// `jpeg` without its APP2 ICC_PROFILE segments; empty when it has none.
std::vector<unsigned char> without_icc_segments(const std::vector<unsigned char>& jpeg) {
  const codec::JpegMarkers markers = codec::read_jpeg_markers(jpeg);
  std::vector<unsigned char> kept;
  std::size_t from = 0;
  for (const std::span<const std::uint8_t> segment : markers.copied_segments) {
    if (!codec::is_icc_segment(segment)) continue;
    const auto at = static_cast<std::size_t>(segment.data() - jpeg.data());
    kept.insert(kept.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(from),
                jpeg.begin() + static_cast<std::ptrdiff_t>(at));
    from = at + segment.size();
  }
  if (from == 0) return {};
  kept.insert(kept.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(from), jpeg.end());
  return kept;
}

/// The file's bytes; empty when it cannot be read.
std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Up to the first `limit` bytes of the file at `path`: a PNG's chunks before its image data.
std::vector<unsigned char> file_head(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head(limit);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(limit));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

/// The first bytes of the JPEG at `path` up to its first scan (its markers and metadata, not the
/// image data), read in growing pieces; the whole file when its markers end no earlier.
std::vector<unsigned char> jpeg_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head;
  for (std::size_t piece = std::size_t{64} << 10; in; piece *= 4) {
    const std::size_t had = head.size();
    head.resize(had + piece);
    in.read(reinterpret_cast<char*>(head.data() + had), static_cast<std::streamsize>(piece));
    head.resize(had + static_cast<std::size_t>(in.gcount()));
    if (codec::read_jpeg_markers(head).valid) break;
  }
  return head;
}

/// The blocks of the JPEG file `jpeg` read without its ICC profile's segments; nullopt when it
/// has none, or when exiv2 refuses the rest too.
std::optional<ImageMetadata> blocks_without_icc(const std::vector<unsigned char>& jpeg) {
  const std::vector<unsigned char> rest = without_icc_segments(jpeg);
  if (rest.empty()) return std::nullopt;
  try {
    const Exiv2::Image::AutoPtr image = Exiv2::ImageFactory::open(rest.data(), static_cast<long>(rest.size()));
    image->readMetadata();
    return take_blocks(*image);
  } catch (const Exiv2::AnyError&) {
    return std::nullopt;
  }
}

/// After exiv2 refused `image`'s metadata as a whole (`reason`): the blocks that are sound. A JPEG
/// is read again without its ICC profile (the block exiv2 validates, and the one a damaged file
/// most often carries); otherwise, or when that fails too, what exiv2 had read before it stopped.
ImageMetadata salvage_blocks(const std::string& path, Exiv2::Image& image, const std::string& reason) {
  if (image.imageType() == Exiv2::ImageType::jpeg) {
    if (std::optional<ImageMetadata> metadata = blocks_without_icc(file_bytes(path))) {
      metadata->warnings.insert(metadata->warnings.begin(), "ICC profile dropped: " + reason);
      return *metadata;
    }
  }
  ImageMetadata metadata = take_blocks(image);
  metadata.icc.clear();  // a profile read in part is no profile
  std::string kept;
  if (!metadata.exif.empty()) kept += "EXIF";
  if (!metadata.xmp.empty()) kept += kept.empty() ? "XMP" : ", XMP";
  metadata.warnings.insert(metadata.warnings.begin(),
                           "metadata read only in part (" + reason + "); kept: " + (kept.empty() ? "none" : kept));
  return metadata;
}

}  // namespace

namespace codec {

std::vector<unsigned char> name_png_icc_profile(std::vector<unsigned char> png) {
  constexpr std::size_t kSignature = 8;
  std::size_t pos = kSignature;
  while (pos + 12 <= png.size()) {
    const std::size_t length = read_be32(&png[pos]);
    if (length > png.size() - pos - 12) break;  // not a whole chunk: leave the file as it is
    const unsigned char* type = &png[pos + 4];
    if (std::memcmp(type, "IDAT", 4) == 0) break;  // iCCP must come before the image data
    if (std::memcmp(type, "iCCP", 4) == 0 && length > 0 && png[pos + 8] == 0) {
      // Chunk: length, "iCCP", keyword, 0, compression method, compressed profile, CRC.
      const std::size_t data_length = kPngIccProfileName.size() + length;
      std::vector<unsigned char> chunk;
      chunk.reserve(data_length + 12);  // at once: grown piecemeal, GCC 12 sees a false -Wstringop-overflow
      append_be32(chunk, static_cast<std::uint32_t>(data_length));
      chunk.insert(chunk.end(), type, type + 4);
      chunk.insert(chunk.end(), kPngIccProfileName.begin(), kPngIccProfileName.end());
      chunk.insert(chunk.end(), png.begin() + static_cast<std::ptrdiff_t>(pos + 8),
                   png.begin() + static_cast<std::ptrdiff_t>(pos + 8 + length));
      append_be32(chunk, png_crc(chunk.data() + 4, data_length + 4));
      png.erase(png.begin() + static_cast<std::ptrdiff_t>(pos),
                png.begin() + static_cast<std::ptrdiff_t>(pos + 12 + length));
      png.insert(png.begin() + static_cast<std::ptrdiff_t>(pos), chunk.begin(), chunk.end());
      break;
    }
    pos += 12 + length;
  }
  return png;
}

}  // namespace codec

namespace {

/// read_metadata's EXIF, ICC and XMP, and a TIFF's resolution (read here, where exiv2 has the
/// file's own tags).
ImageMetadata read_blocks(const std::string& path) {
  init_exiv2();
  Exiv2::Image::AutoPtr image;
  try {
    image = Exiv2::ImageFactory::open(path);
  } catch (const Exiv2::AnyError&) {
    return {};  // a format exiv2 does not know, or a file it cannot open: no metadata
  }
  // A JPEG's ICC chunks are judged as the GPU route judges them (codec::jpeg_segments_to_copy):
  // a damaged profile is dropped with the same warning on both routes, and the blocks beside it
  // are read without it (exiv2 may stop at a malformed chunk and lose the segments after it).
  std::string icc_warning;
  if (image->imageType() == Exiv2::ImageType::jpeg) {
    if (const std::string defect = codec::jpeg_icc_defect(codec::read_jpeg_markers(jpeg_head(path))); !defect.empty()) {
      icc_warning = codec::icc_dropped_warning(defect);
      if (std::optional<ImageMetadata> metadata = blocks_without_icc(file_bytes(path))) {
        metadata->warnings.insert(metadata->warnings.begin(), icc_warning);
        return *metadata;
      }
    }
  }
  ImageMetadata metadata;
  try {
    image->readMetadata();
    metadata = take_blocks(*image);
    if (image->imageType() == Exiv2::ImageType::tiff)
      std::tie(metadata.dpi_x, metadata.dpi_y) = tiff_density(image->exifData());
  } catch (const Exiv2::AnyError& e) {
    try {
      metadata = salvage_blocks(path, *image, e.what());
    } catch (const Exiv2::AnyError&) {
      return {};
    }
  }
  if (!icc_warning.empty()) {  // the other blocks are damaged too: what exiv2 read, without the profile
    metadata.icc.clear();
    metadata.warnings.insert(metadata.warnings.begin(), icc_warning);
  }
  return metadata;
}

}  // namespace

ImageMetadata read_metadata(const std::string& path) {
  ImageMetadata metadata = read_blocks(path);
  if (metadata.dpi_x <= 0) {
    const std::vector<unsigned char> head = file_head(path, std::size_t{1} << 20);
    const bool png = head.size() > 8 && std::memcmp(head.data(), "\x89PNG", 4) == 0;
    const bool jpeg = head.size() > 3 && head[0] == 0xFF && head[1] == 0xD8;
    std::tie(metadata.dpi_x, metadata.dpi_y) = png    ? png_density(head)
                                               : jpeg ? jfif_density(head)
                                                      : std::pair{0.0, 0.0};
  }
  if (metadata.dpi_x <= 0 || metadata.dpi_y <= 0) metadata.dpi_x = metadata.dpi_y = 0;
  return metadata;
}

int exif_orientation(const ImageMetadata& metadata) {
  init_exiv2();
  try {
    const Exiv2::ExifData exif = decode_exif(metadata.exif);
    const auto it = exif.findKey(Exiv2::ExifKey(kOrientationKey));
    if (it == exif.end() || it->count() == 0) return 1;
    const long value = it->toLong();
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  } catch (const Exiv2::AnyError&) {
    return 1;
  }
}

bool codec::orient_upright(cv::Mat& image, int orientation) {
  // EXIF (and TIFF) orientations: how the stored rows and columns map to the upright picture.
  switch (orientation) {
    case 2:
      cv::flip(image, image, 1);
      break;  // mirrored left-right
    case 3:
      cv::rotate(image, image, cv::ROTATE_180);
      break;
    case 4:
      cv::flip(image, image, 0);
      break;  // mirrored top-bottom
    case 5:
      cv::transpose(image, image);
      break;  // mirrored along the main diagonal
    case 6:
      cv::rotate(image, image, cv::ROTATE_90_CLOCKWISE);
      break;
    case 7:
      cv::transpose(image, image);
      cv::flip(image, image, -1);
      break;  // along the other diagonal
    case 8:
      cv::rotate(image, image, cv::ROTATE_90_COUNTERCLOCKWISE);
      break;
    default:
      return false;  // upright already, or no orientation
  }
  return true;
}

void auto_orient(cv::Mat& image, ImageMetadata& metadata) {
  if (!codec::orient_upright(image, exif_orientation(metadata))) return;  // nothing to reset
  Exiv2::ExifData exif = decode_exif(metadata.exif);
  exif[kOrientationKey] = std::uint16_t{1};
  metadata.exif = encode_exif(exif);
}

namespace codec {

std::vector<unsigned char> with_png_density(std::vector<unsigned char> png, double dpi_x, double dpi_y) {
  constexpr std::size_t kAfterIhdr = 8 + 12 + 13;  // signature, then IHDR's 13 bytes in a chunk
  if (dpi_x <= 0 || dpi_y <= 0 || png.size() < kAfterIhdr || png_density(png).first > 0) return png;
  std::vector<unsigned char> chunk;
  chunk.reserve(21);
  append_be32(chunk, 9);
  for (const char c : std::string_view("pHYs")) chunk.push_back(static_cast<unsigned char>(c));
  append_be32(chunk, static_cast<std::uint32_t>(std::lround(dpi_x * kInchesPerMetre)));
  append_be32(chunk, static_cast<std::uint32_t>(std::lround(dpi_y * kInchesPerMetre)));
  chunk.push_back(1);  // per metre
  append_be32(chunk, png_crc(chunk.data() + 4, 13));
  png.insert(png.begin() + static_cast<std::ptrdiff_t>(kAfterIhdr), chunk.begin(), chunk.end());
  return png;
}

std::vector<unsigned char> embed_metadata(const std::string& path, std::vector<unsigned char> encoded,
                                          const ImageMetadata& metadata) {
  init_exiv2();
  try {
    const Exiv2::Image::AutoPtr image = Exiv2::ImageFactory::open(encoded.data(), static_cast<long>(encoded.size()));
    image->readMetadata();
    if (!metadata.exif.empty()) {
      Exiv2::ExifData merged = image->exifData();  // the encoder's own tags (a TIFF's layout) win
      for (const Exiv2::Exifdatum& datum : decode_exif(metadata.exif))
        if (merged.findKey(Exiv2::ExifKey(datum.key())) == merged.end()) merged.add(datum);
      image->setExifData(merged);
    }
    if (!metadata.icc.empty()) {
      Exiv2::DataBuf icc(metadata.icc.data(), static_cast<long>(metadata.icc.size()));
      image->setIccProfile(icc, false);
    }
    if (!metadata.xmp.empty()) image->setXmpPacket(metadata.xmp);
    image->writeMetadata();
    Exiv2::BasicIo& io = image->io();
    io.seek(0, Exiv2::BasicIo::beg);
    const Exiv2::DataBuf written = io.read(static_cast<long>(io.size()));
    std::vector<unsigned char> out(written.pData_, written.pData_ + written.size_);
    // exiv2 0.27 writes a PNG's iCCP chunk with an empty profile name, which PNG forbids:
    // libvips and ImageMagick then drop the profile ("iCCP: bad keyword").
    if (image->imageType() == Exiv2::ImageType::png && !metadata.icc.empty())
      out = name_png_icc_profile(std::move(out));
    return out;
  } catch (const Exiv2::AnyError& e) {
    throw Error(ErrorKind::output, path + ": cannot write the metadata (EXIF, ICC, XMP): " + e.what() +
                                       " (use `strip_metadata` to leave it out)");
  }
}

}  // namespace codec
}  // namespace cuconv
