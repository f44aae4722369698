// SPDX-License-Identifier: Apache-2.0
// Image headers read without decoding: the claimed size of PNG, JPEG, TIFF and BMP files, and
// the walks that find truncated PNG and JPEG files. Layouts: PNG (ISO/IEC 15948) chunks, JPEG
// (ITU T.81 Annex B) markers, TIFF 6.0 and BigTIFF image file directories, BMP info headers.
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

namespace cuconv::detail {
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
  /// The next byte, or EOF. Unlocked: JPEG scans are read a byte at a time.
  int next_byte() { return getc_unlocked(file_.get()); }

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

std::string hex_byte(int byte) {
  char text[8];
  std::snprintf(text, sizeof text, "%02X", byte & 0xFF);
  return text;
}

std::string hex_marker(int code) { return "FF" + hex_byte(code); }

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
      header.defect = "the file ends after " + std::to_string(file.size()) +
                      " bytes, before the IEND chunk that closes every PNG";
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
      header.defect = "chunk " + type + " at byte " + std::to_string(start) + " needs " +
                      std::to_string(end - start) + " bytes, the file ends after " +
                      std::to_string(file.size() - start);
      return header;
    }
    if (type == "IEND") return header;
  }
}

// ---- JPEG: markers and their segments; after each SOS, entropy-coded data up to a marker --------

constexpr int kJpegSos = 0xDA;
constexpr int kJpegEoi = 0xD9;

/// SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range.
bool is_start_of_frame(int code) { return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC; }
bool is_restart(int code) { return code >= 0xD0 && code <= 0xD7; }

/// Entropy-coded data ends at the first marker that is not a stuffed 0xFF00 or a restart marker.
/// Returns that marker's code, or EOF when the file ends first.
int skip_entropy_coded_data(FileReader& file) {
  for (int byte = file.next_byte(); byte != EOF; byte = file.next_byte()) {
    if (byte != 0xFF) continue;
    int code = file.next_byte();
    while (code == 0xFF) code = file.next_byte();  // fill bytes
    if (code == EOF) return EOF;
    if (code != 0x00 && !is_restart(code)) return code;
  }
  return EOF;
}

/// Which DCT coefficients of which components the scans so far have sent in full: a progressive
/// JPEG cut after a whole scan and closed with EOI decodes without a word from libjpeg, its later
/// scans' detail missing. Per component, the lowest successive-approximation bit (Al) each of the
/// 64 coefficients has reached; 0 is complete.
class ScanCoverage {
 public:
  /// From a SOF segment's body (after the length): precision, height, width, Nf, then Nf x 3 bytes.
  void start_frame(int code, const std::uint8_t* body, std::size_t size) {
    progressive_ = code == 0xC2 || code == 0xC6 || code == 0xCA || code == 0xCE;
    components_.clear();
    if (size < 6) return;
    const std::size_t count = body[5];
    for (std::size_t i = 0; i < count && 6 + 3 * i < size; ++i) components_.push_back({body[6 + 3 * i], {}});
    for (Component& c : components_) c.lowest_bit.fill(kNotSent);
  }

  /// From a SOS segment's body: Ns, Ns x (Cs, tables), Ss, Se, Ah/Al.
  void add_scan(const std::uint8_t* body, std::size_t size) {
    if (size < 1) return;
    const std::size_t count = body[0];
    if (size < 1 + 2 * count + 3) return;
    const std::uint8_t* spectral = body + 1 + 2 * count;
    // Sequential scans carry every coefficient to full precision.
    const int first = progressive_ ? spectral[0] : 0;
    const int last = progressive_ ? std::min<int>(spectral[1], 63) : 63;
    const int bit = progressive_ ? spectral[2] & 0x0F : 0;
    for (std::size_t i = 0; i < count; ++i)
      for (Component& c : components_)
        if (c.id == body[1 + 2 * i])
          for (int k = first; k <= last; ++k) c.lowest_bit[static_cast<std::size_t>(k)] =
              static_cast<std::uint8_t>(std::min<int>(c.lowest_bit[static_cast<std::size_t>(k)], bit));
  }

  /// Empty when every coefficient of every component was sent in full; else what is missing.
  [[nodiscard]] std::string missing() const {
    for (const Component& c : components_) {
      for (std::size_t k = 0; k < c.lowest_bit.size(); ++k) {
        if (c.lowest_bit[k] == 0) continue;
        return "its scans end before the whole image was sent (component " + std::to_string(c.id) +
               ", coefficient " + std::to_string(k) +
               (c.lowest_bit[k] == kNotSent ? " never sent" : " not refined to full precision") + ")";
      }
    }
    return {};
  }

 private:
  static constexpr std::uint8_t kNotSent = 0xFF;
  struct Component {
    int id;
    std::array<std::uint8_t, 64> lowest_bit;
  };
  bool progressive_ = false;
  std::vector<Component> components_;
};

ImageHeader inspect_jpeg(FileReader& file) {
  ImageHeader header;
  header.format = "JPEG";
  const auto cut_off = [&](const std::string& where) {
    header.defect = "the file ends after " + std::to_string(file.size()) + " bytes, " + where +
                    ", before the end-of-image marker FFD9";
    return header;
  };
  file.seek(2);  // past SOI
  int scans = 0;
  ScanCoverage coverage;
  int found_in_scan = EOF;  // a marker that ended entropy-coded data, not handled yet
  while (true) {
    int code = std::exchange(found_in_scan, EOF);
    const std::uint64_t marker_at = code == EOF ? file.offset() : file.offset() - 2;
    if (code == EOF) {
      const int byte = file.next_byte();
      if (byte == EOF) return cut_off("between segments");
      if (byte != 0xFF) {
        header.defect = "expected a marker (FFxx) at byte " + std::to_string(marker_at) + ", found " +
                        hex_byte(byte);
        return header;
      }
      do code = file.next_byte(); while (code == 0xFF);  // fill bytes
      if (code == EOF) return cut_off("inside a marker");
    }
    if (code == kJpegEoi) {
      if (scans == 0) header.defect = "end-of-image marker before any image data";
      else header.defect = coverage.missing();
      return header;
    }
    if (is_restart(code) || code == 0x01) continue;  // RSTn and TEM have no segment
    if (code == 0x00 || code == 0xD8) {
      header.defect = "invalid marker " + hex_marker(code) + " at byte " + std::to_string(marker_at);
      return header;
    }
    std::array<std::uint8_t, 2> length_bytes{};
    if (!file.read(length_bytes.data(), length_bytes.size())) return cut_off("inside marker " + hex_marker(code));
    const std::uint64_t length = big_endian(length_bytes.data(), 2);  // counts itself, not the marker
    const std::uint64_t body = file.offset();
    if (length < 2) {
      header.defect = "segment " + hex_marker(code) + " at byte " + std::to_string(marker_at) + " has length " +
                      std::to_string(length);
      return header;
    }
    // SOF and SOS bodies are short (at most 2 + 3 x 255 bytes): read whole for the size and coverage.
    std::vector<std::uint8_t> segment;
    if (is_start_of_frame(code) || code == kJpegSos) {
      segment.resize(static_cast<std::size_t>(length - 2));
      segment.resize(file.read_some(segment.data(), segment.size()));
    }
    if (is_start_of_frame(code)) {
      if (segment.size() >= 5) {  // precision, height, width, components
        header.has_size = true;
        header.height = big_endian(segment.data() + 1, 2);
        header.width = big_endian(segment.data() + 3, 2);
        if (segment.size() >= 6) header.channels = segment[5];
      }
      coverage.start_frame(code, segment.data(), segment.size());
    }
    if (code == kJpegSos) coverage.add_scan(segment.data(), segment.size());
    if (!file.seek(body + length - 2)) {
      return cut_off("inside segment " + hex_marker(code) + " that starts at byte " + std::to_string(marker_at));
    }
    if (code == kJpegSos) {
      ++scans;
      found_in_scan = skip_entropy_coded_data(file);
      if (found_in_scan == EOF) return cut_off("inside the compressed data of scan " + std::to_string(scans));
    }
  }
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

ImageHeader inspect_bmp(FileReader& file) {
  ImageHeader header;
  header.format = "BMP";
  std::array<std::uint8_t, 26> head{};  // 14-byte file header, then the info header's start
  if (!file.seek(0) || !file.read(head.data(), head.size())) {
    header.defect = "the file ends inside the BMP header";
    return header;
  }
  constexpr std::uint64_t kOs2CoreHeaderSize = 12;  // 16-bit unsigned sides; all others: 32-bit signed
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
    header.width = static_cast<std::uint64_t>(width);
    // A negative height means rows stored top-down.
    header.height = static_cast<std::uint64_t>(height < 0 ? -static_cast<std::int64_t>(height) : height);
  }
  header.has_size = true;
  return header;
}

}  // namespace

std::optional<ImageHeader> inspect_image_file(const std::string& path) {
  FileReader file(path);
  std::array<std::uint8_t, kPngSignature.size()> magic{};
  const std::size_t magic_size = file.read_some(magic.data(), magic.size());
  const auto starts_with = [&](std::initializer_list<std::uint8_t> signature) {
    return magic_size >= signature.size() && std::equal(signature.begin(), signature.end(), magic.begin());
  };
  if (std::equal(kPngSignature.begin(), kPngSignature.end(), magic.begin()) && magic_size == magic.size())
    return inspect_png(file);
  if (starts_with({0xFF, 0xD8, 0xFF})) return inspect_jpeg(file);
  if (starts_with({'I', 'I', 42, 0})) return inspect_tiff(file, true, false);
  if (starts_with({'M', 'M', 0, 42})) return inspect_tiff(file, false, false);
  if (starts_with({'I', 'I', 43, 0})) return inspect_tiff(file, true, true);
  if (starts_with({'M', 'M', 0, 43})) return inspect_tiff(file, false, true);
  if (starts_with({'B', 'M'})) return inspect_bmp(file);
  return std::nullopt;
}

}  // namespace cuconv::detail
