// SPDX-License-Identifier: Apache-2.0
// Image headers read without decoding: the claimed size of PNG, JPEG, TIFF and BMP files, and
// the walks that find truncated PNG, JPEG and RLE-compressed BMP files. Layouts: PNG (ISO/IEC
// 15948) chunks, TIFF 6.0 and BigTIFF image file directories, BMP info headers and RLE8/RLE4
// escapes (Microsoft's BITMAPINFOHEADER reference); JPEG markers (ITU T.81 Annex B) are
// walked by codec/jpeg_markers.cpp, the one JPEG marker parser. And the refusals read_image
// makes from a header (no pixels, over the pixel limit, truncated, unsupported channel count).
#include "codec/image_header.hpp"

#include <cuconv/error.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace cuconv::codec {
namespace {

/// Sequential reads from a file, with the offsets the messages name.
class FileReader {
 public:
  explicit FileReader(const std::string& path) : file_(std::fopen(path.c_str(), "rb")) {
    struct stat info {};
    if (!file_ || ::fstat(::fileno(file_.get()), &info) != 0)
      throw Error(ErrorKind::bad_input, path + ": cannot read: " + std::strerror(errno));
    size_ = static_cast<std::uint64_t>(info.st_size);
  }

  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] std::uint64_t offset() const { return static_cast<std::uint64_t>(::ftello(file_.get())); }
  /// Up to `count` bytes; returns how many there were.
  std::size_t read_some(std::uint8_t* out, std::size_t count) { return std::fread(out, 1, count, file_.get()); }
  /// Exactly `count` bytes; false when the file ends first.
  bool read(std::uint8_t* out, std::size_t count) { return read_some(out, count) == count; }
  /// Moves to `offset`; false when it lies beyond the end of the file.
  bool seek(std::uint64_t offset) {
    return offset <= size_ && ::fseeko(file_.get(), static_cast<off_t>(offset), SEEK_SET) == 0;
  }

 private:
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  std::unique_ptr<std::FILE, Closer> file_;
  std::uint64_t size_ = 0;
};

std::uint64_t big_endian(const std::uint8_t* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = 0; i < count; ++i) value = value << 8 | bytes[i];
  return value;
}

std::uint64_t little_endian(const std::uint8_t* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = value << 8 | bytes[i];
  return value;
}

// ---- PNG: signature, then chunks (length, type, data, CRC) up to IEND --------------------------

constexpr std::array<std::uint8_t, 8> kPngSignature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr std::uint64_t kPngMaxChunkLength = 0x7FFFFFFF;  // the spec's limit, 2^31 - 1

bool is_chunk_type(const std::uint8_t* type) {
  return std::all_of(type, type + 4, [](std::uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); });
}

ImageHeader inspect_png(FileReader& file) {
  ImageHeader header;
  header.format = "PNG";
  file.seek(kPngSignature.size());
  for (bool first = true;; first = false) {
    const std::uint64_t start = file.offset();
    std::array<std::uint8_t, 8> length_and_type{};
    if (!file.read(length_and_type.data(), length_and_type.size())) {
      header.defect =
          "the file ends after " + std::to_string(file.size()) + " bytes, before the IEND chunk that closes every PNG";
      return header;
    }
    const std::uint64_t length = big_endian(length_and_type.data(), 4);
    if (length > kPngMaxChunkLength || !is_chunk_type(length_and_type.data() + 4)) {
      header.defect = "no valid chunk at byte " + std::to_string(start);
      return header;
    }
    const std::string type(length_and_type.begin() + 4, length_and_type.end());
    if (first) {
      std::array<std::uint8_t, 8> size{};
      if (type != "IHDR" || length != 13) {
        header.defect = "the first chunk is " + type + ", not IHDR";
        return header;
      }
      if (file.read(size.data(), size.size())) {
        header.has_size = true;
        header.width = big_endian(size.data(), 4);
        header.height = big_endian(size.data() + 4, 4);
      }
    }
    const std::uint64_t end = start + 8 + length + 4;  // length and type, data, CRC
    if (!file.seek(end)) {
      header.defect = "chunk " + type + " at byte " + std::to_string(start) + " needs " + std::to_string(end - start) +
                      " bytes, the file ends after " + std::to_string(file.size() - start);
      return header;
    }
    if (type == "IEND") return header;
  }
}

// ---- JPEG: the one marker walk (codec/jpeg_markers.cpp), over the file's bytes in memory -------

ImageHeader inspect_jpeg_file(FileReader& file) {
  // The walk reads every byte of the scans anyway: read once, walked in memory.
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(file.size()));
  file.seek(0);
  bytes.resize(file.read_some(bytes.data(), bytes.size()));
  return inspect_jpeg(bytes);
}

// ---- TIFF and BigTIFF: the first image file directory's ImageWidth and ImageLength -------------

ImageHeader inspect_tiff(FileReader& file, bool little, bool big_tiff) {
  ImageHeader header;
  header.format = "TIFF";
  const auto number = [little](const std::uint8_t* bytes, int count) {
    return little ? little_endian(bytes, count) : big_endian(bytes, count);
  };
  // Classic TIFF: 32-bit offsets and counts, 12-byte entries; BigTIFF: 64-bit, 20-byte entries.
  const int offset_size = big_tiff ? 8 : 4;
  const int entry_count_size = big_tiff ? 8 : 2;
  const std::size_t entry_size = big_tiff ? 20 : 12;
  std::array<std::uint8_t, 16> head{};
  if (!file.seek(0) || !file.read(head.data(), big_tiff ? 16 : 8)) {
    header.defect = "the file ends inside the TIFF header";
    return header;
  }
  const std::uint64_t directory = number(head.data() + (big_tiff ? 8 : 4), offset_size);
  std::array<std::uint8_t, 8> entry_count{};
  if (!file.seek(directory) || !file.read(entry_count.data(), entry_count_size)) {
    header.defect = "the first image directory (byte " + std::to_string(directory) +
                    ") lies beyond the end of the file (" + std::to_string(file.size()) + " bytes)";
    return header;
  }
  constexpr std::uint64_t kImageWidth = 256, kImageLength = 257, kSamplesPerPixel = 277;
  constexpr std::uint64_t kShort = 3, kLong = 4, kLong8 = 16;
  std::optional<std::uint64_t> width, height, samples;
  const std::uint64_t entries = number(entry_count.data(), entry_count_size);
  // Tags come in ascending order: SamplesPerPixel is the last of the three.
  std::uint64_t tag = 0;
  for (std::uint64_t i = 0; i < entries && !(width && height && samples) && tag < kSamplesPerPixel; ++i) {
    std::array<std::uint8_t, 20> entry{};  // tag, type, count, value (inline for one number)
    if (!file.read(entry.data(), entry_size)) {
      header.defect = "the file ends inside the first image directory";
      return header;
    }
    tag = number(entry.data(), 2);
    const std::uint64_t type = number(entry.data() + 2, 2);
    const std::uint8_t* value = entry.data() + 4 + offset_size;
    std::optional<std::uint64_t> side;
    if (type == kShort) side = number(value, 2);
    if (type == kLong) side = number(value, 4);
    if (type == kLong8) side = number(value, 8);
    if (tag == kImageWidth) width = side;
    if (tag == kImageLength) height = side;
    if (tag == kSamplesPerPixel) samples = side;
  }
  if (width && height) {
    header.has_size = true;
    header.width = *width;
    header.height = *height;
  }
  // Absent, SamplesPerPixel is 1; a count beyond int is as unsupported as 2.
  if (samples) header.channels = static_cast<int>(std::min<std::uint64_t>(*samples, 1000));
  return header;
}

// ---- BMP: file header, then the info header's width and height ---------------------------------

/// Why the RLE8 or RLE4 data of a BMP (`rle4`) does not cover its `width` x `height` pixels, empty
/// when it does: a file that ends before the end-of-bitmap escape, or an escape that comes before
/// the last row. Runs, deltas and absolute runs are counted, their pixels not decoded.
std::string rle_defect(const std::vector<std::uint8_t>& data, bool rle4, std::uint64_t width, std::uint64_t height) {
  std::size_t i = 0;
  std::uint64_t x = 0, y = 0;  // rows counted from the first stored (the bottom one)
  const auto ends = [&] {
    return "the RLE data ends after " + std::to_string(data.size()) + " bytes, in row " + std::to_string(y + 1) +
           " of " + std::to_string(height) + ", without its end-of-bitmap escape";
  };
  while (true) {
    if (i + 2 > data.size()) return ends();
    const std::uint8_t count = data[i], code = data[i + 1];
    i += 2;
    if (count > 0) {
      x += count;  // a run
    } else if (code == 0) {
      x = 0;  // end of line
      ++y;
    } else if (code == 1) {  // end of bitmap
      if (y >= height || (y + 1 == height && x >= width)) return {};
      return "its RLE data ends (end-of-bitmap escape) after " + std::to_string(y) + " of its " +
             std::to_string(height) + " rows";
    } else if (code == 2) {  // delta: right and up
      if (i + 2 > data.size()) return ends();
      x += data[i];
      y += data[i + 1];
      i += 2;
    } else {  // absolute: `code` pixels, padded to 16 bits
      std::size_t bytes = rle4 ? (code + 1u) / 2 : code;
      bytes += bytes & 1;
      if (i + bytes > data.size()) return ends();
      i += bytes;
      x += code;
    }
  }
}

ImageHeader inspect_bmp(FileReader& file) {
  ImageHeader header;
  header.format = "BMP";
  std::array<std::uint8_t, 34> head{};  // 14-byte file header, then the info header's start
  if (!file.seek(0) || !file.read(head.data(), 26)) {
    header.defect = "the file ends inside the BMP header";
    return header;
  }
  constexpr std::uint64_t kOs2CoreHeaderSize = 12;  // 16-bit unsigned sides; all others: 32-bit signed
  std::uint64_t compression = 0;
  if (little_endian(head.data() + 14, 4) == kOs2CoreHeaderSize) {
    header.width = little_endian(head.data() + 18, 2);
    header.height = little_endian(head.data() + 20, 2);
  } else {
    const auto width = static_cast<std::int32_t>(little_endian(head.data() + 18, 4));
    const auto height = static_cast<std::int32_t>(little_endian(head.data() + 22, 4));
    if (width < 0) {
      header.defect = "negative width " + std::to_string(width) + " in the BMP header";
      return header;
    }
    if (!file.read(head.data() + 26, 8)) {
      header.defect = "the file ends inside the BMP header";
      return header;
    }
    compression = little_endian(head.data() + 30, 4);
    constexpr std::uint64_t kRle8 = 1, kRle4 = 2;
    if (height < 0 && (compression == kRle8 || compression == kRle4)) {
      header.defect = "negative height " + std::to_string(height) +
                      " (rows stored top-down) with RLE compression, which BMP allows only bottom-up";
      return header;
    }
    header.width = static_cast<std::uint64_t>(width);
    // A negative height means rows stored top-down.
    header.height = static_cast<std::uint64_t>(height < 0 ? -static_cast<std::int64_t>(height) : height);
    if (compression == kRle8 || compression == kRle4) {
      // The decoder leaves the pixels its RLE data does not reach as they were: walk it here.
      const std::uint64_t pixels_at = little_endian(head.data() + 10, 4);
      std::vector<std::uint8_t> data(pixels_at < file.size() ? file.size() - pixels_at : 0);
      if (!file.seek(pixels_at) || !file.read(data.data(), data.size())) data.clear();
      header.defect = rle_defect(data, compression == kRle4, header.width, header.height);
    }
  }
  header.has_size = true;
  return header;
}

}  // namespace

ImageHeader inspect_jpeg(std::span<const std::uint8_t> bytes, codec::JpegMarkers* markers) {
  codec::JpegStructure walked = codec::walk_jpeg(bytes);
  ImageHeader header;
  header.format = "JPEG";
  header.has_size = walked.has_size;
  header.width = walked.width;
  header.height = walked.height;
  header.channels = walked.channels;
  header.defect = std::move(walked.defect);
  if (markers != nullptr) *markers = std::move(walked.markers);
  return header;
}

void check_pixel_count(const std::string& path, const std::string& what, std::uint64_t width, std::uint64_t height,
                       const ReadLimits& limits) {
  // width * height > max, without the overflow a BigTIFF's 64-bit sides could cause.
  if (height != 0 && width > limits.max_pixels / height) {
    throw Error(ErrorKind::bad_input, path + ": " + what + " " + std::to_string(width) + "x" + std::to_string(height) +
                                          " pixels, more than the limit of " + std::to_string(limits.max_pixels) +
                                          " (raise it with `max_pixels`)");
  }
}

void check_header(const std::string& path, const ImageHeader& header, const ReadLimits& limits) {
  if (header.has_size) {
    if (header.width == 0 || header.height == 0) {
      throw Error(ErrorKind::bad_input, path + ": " + header.format + " header claims a " +
                                            std::to_string(header.width) + "x" + std::to_string(header.height) +
                                            " image: it has no pixels");
    }
    check_pixel_count(path, header.format + " header claims", header.width, header.height, limits);
  }
  if (!header.defect.empty())
    throw Error(ErrorKind::bad_input,
                path + ": cannot decode image: truncated or corrupt " + header.format + " file: " + header.defect);
  // A decoder may quietly keep the first sample of an unsupported count (OpenCV reads a gray +
  // extra-sample TIFF as gray): refuse from what the header says.
  if (header.channels != 0 && header.channels != 1 && header.channels != 3 && header.channels != 4)
    throw Error(ErrorKind::bad_input, path + ": unsupported channel count " + std::to_string(header.channels) +
                                          " (the " + header.format +
                                          " header's samples per pixel; supported: 1, 3, 4)");
}

void check_decoded_size(const std::string& path, const ImageHeader& header, int rows, int cols, int channels) {
  const auto w = static_cast<std::uint64_t>(cols), h = static_cast<std::uint64_t>(rows);
  if (header.has_size && !(w == header.width && h == header.height) && !(w == header.height && h == header.width))
    throw Error(ErrorKind::bad_input, path + ": cannot decode image: the decoder returned " + std::to_string(w) + "x" +
                                          std::to_string(h) + " pixels, but the " + header.format + " header claims " +
                                          std::to_string(header.width) + "x" + std::to_string(header.height));
  if (header.channels >= 3 && channels < 3)
    throw Error(ErrorKind::bad_input, path + ": cannot decode image: the decoder returned " + std::to_string(channels) +
                                          " channel(s), but the " + header.format + " header claims " +
                                          std::to_string(header.channels) + " samples per pixel");
}

std::optional<ImageHeader> inspect_image_file(const std::string& path) {
  FileReader file(path);
  std::array<std::uint8_t, kPngSignature.size()> magic{};
  const std::size_t magic_size = file.read_some(magic.data(), magic.size());
  const auto starts_with = [&](std::initializer_list<std::uint8_t> signature) {
    return magic_size >= signature.size() && std::equal(signature.begin(), signature.end(), magic.begin());
  };
  if (std::equal(kPngSignature.begin(), kPngSignature.end(), magic.begin()) && magic_size == magic.size())
    return inspect_png(file);
  if (starts_with({0xFF, 0xD8, 0xFF})) return inspect_jpeg_file(file);
  if (starts_with({'I', 'I', 42, 0})) return inspect_tiff(file, true, false);
  if (starts_with({'M', 'M', 0, 42})) return inspect_tiff(file, false, false);
  if (starts_with({'I', 'I', 43, 0})) return inspect_tiff(file, true, true);
  if (starts_with({'M', 'M', 0, 43})) return inspect_tiff(file, false, true);
  if (starts_with({'B', 'M'})) return inspect_bmp(file);
  return std::nullopt;
}

}  // namespace cuconv::codec
