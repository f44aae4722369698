// SPDX-License-Identifier: Apache-2.0
// The one JPEG marker walk (jpeg_markers.hpp): ITU-T T.81 B.1, markers FFxx, segments with a
// 2-byte big-endian length that counts itself, and after each SOS entropy-coded data up to the
// next marker that is not a stuffed 0xFF00 or a restart.
#include "codec/jpeg_markers.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

namespace cuconv::codec {

namespace {

constexpr int kSoi = 0xD8;
constexpr int kEoi = 0xD9;
constexpr int kSos = 0xDA;
constexpr int kApp0 = 0xE0;
constexpr int kApp14 = 0xEE;
constexpr int kApp15 = 0xEF;
constexpr int kNoMarker = -1;  ///< the bytes end before a marker

bool is_restart(int code) { return code >= 0xD0 && code <= 0xD7; }
bool has_no_segment(int code) { return code == 0x01 || is_restart(code); }  // TEM, RSTn

int big_endian16(const std::uint8_t* p) { return (p[0] << 8) | p[1]; }

std::string hex_marker(int code) {
  char text[8];
  std::snprintf(text, sizeof text, "FF%02X", code & 0xFF);
  return text;
}

/// An ICC chunk: FF E2, length, "ICC_PROFILE\0", the chunk's number (1-based), the count, data.
constexpr std::string_view kIccTag("ICC_PROFILE\0", 12);
constexpr std::size_t kIccTagAt = 4;
constexpr std::size_t kIccDataAt = kIccTagAt + kIccTag.size() + 2;

std::string hex_byte(int byte) { return hex_marker(byte).substr(2); }

/// Which DCT coefficients of which components the scans so far have sent in full: a progressive
/// JPEG cut after a whole scan and closed with EOI decodes without a word from libjpeg, its later
/// scans' detail missing. Per component, the lowest successive-approximation bit (Al) each of the
/// 64 coefficients has reached; 0 is complete.
class ScanCoverage {
 public:
  /// From a SOF segment's body (after the length): precision, height, width, Nf, then Nf x 3 bytes.
  void start_frame(int code, std::span<const std::uint8_t> body) {
    progressive_ = code == 0xC2 || code == 0xC6 || code == 0xCA || code == 0xCE;
    components_.clear();
    if (body.size() < 6) return;
    const std::size_t count = body[5];
    for (std::size_t i = 0; i < count && 6 + 3 * i < body.size(); ++i) components_.push_back({body[6 + 3 * i], {}});
    for (Component& c : components_) c.lowest_bit.fill(kNotSent);
  }

  /// From a SOS segment's body: Ns, Ns x (Cs, tables), Ss, Se, Ah/Al.
  void add_scan(std::span<const std::uint8_t> body) {
    if (body.empty()) return;
    const std::size_t count = body[0];
    if (body.size() < 1 + 2 * count + 3) return;
    const std::uint8_t* spectral = body.data() + 1 + 2 * count;
    // Sequential scans carry every coefficient to full precision.
    const int first = progressive_ ? spectral[0] : 0;
    const int last = progressive_ ? std::min<int>(spectral[1], 63) : 63;
    const int bit = progressive_ ? spectral[2] & 0x0F : 0;
    for (std::size_t i = 0; i < count; ++i)
      for (Component& c : components_)
        if (c.id == body[1 + 2 * i])
          for (int k = first; k <= last; ++k)
            c.lowest_bit[static_cast<std::size_t>(k)] =
                static_cast<std::uint8_t>(std::min<int>(c.lowest_bit[static_cast<std::size_t>(k)], bit));
  }

  /// Empty when every coefficient of every component was sent in full; else what is missing.
  [[nodiscard]] std::string missing() const {
    for (const Component& c : components_) {
      for (std::size_t k = 0; k < c.lowest_bit.size(); ++k) {
        if (c.lowest_bit[k] == 0) continue;
        return "its scans end before the whole image was sent (component " + std::to_string(c.id) + ", coefficient " +
               std::to_string(k) + (c.lowest_bit[k] == kNotSent ? " never sent" : " not refined to full precision") +
               ")";
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

/// Entropy-coded data from `pos` ends at the first marker that is not a stuffed 0xFF00 or a
/// restart marker: returns that marker's code with `pos` just past it, or kNoMarker when the
/// bytes end first.
int skip_entropy_coded_data(std::span<const std::uint8_t> bytes, std::size_t& pos) {
  const std::size_t size = bytes.size();
  while (pos < size) {
    const void* found = std::memchr(bytes.data() + pos, 0xFF, size - pos);
    if (found == nullptr) break;
    pos = static_cast<std::size_t>(static_cast<const std::uint8_t*>(found) - bytes.data()) + 1;
    while (pos < size && bytes[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= size) break;
    const int code = bytes[pos++];
    if (code != 0x00 && !is_restart(code)) return code;
  }
  pos = size;
  return kNoMarker;
}

/// The walk from SOI: to the first SOS when `whole_file` is false (the markers only), else on
/// through every scan to EOI. Every message a defect gives is made here, so both readers of a
/// JPEG say the same about the same file.
JpegStructure walk(std::span<const std::uint8_t> bytes, bool whole_file) {
  JpegStructure s;
  JpegMarkers& m = s.markers;
  if (bytes.size() < 2 || bytes[0] != 0xFF || bytes[1] != kSoi) {
    m.defect = s.defect = "not a JPEG stream (no SOI marker)";
    return s;
  }
  const std::size_t size = bytes.size();
  int scans = 0;
  std::string frame_problem;  ///< why the frame header the markers found is unusable
  const auto fail = [&](std::string why) -> JpegStructure {
    s.defect = std::move(why);
    if (scans == 0) m.defect = s.defect;
    return s;
  };
  const auto cut_off = [&](const std::string& where) {
    return fail("the file ends after " + std::to_string(size) + " bytes, " + where +
                ", before the end-of-image marker FFD9");
  };
  ScanCoverage coverage;
  std::size_t pos = 2;            // past SOI
  int found_in_scan = kNoMarker;  // a marker that ended entropy-coded data, not handled yet
  while (true) {
    int code = std::exchange(found_in_scan, kNoMarker);
    const std::size_t marker_at = code == kNoMarker ? pos : pos - 2;
    if (code == kNoMarker) {
      if (pos >= size) return cut_off("between segments");
      if (bytes[pos] != 0xFF)
        return fail("expected a marker (FFxx) at byte " + std::to_string(marker_at) + ", found " +
                    hex_byte(bytes[pos]));
      ++pos;
      while (pos < size && bytes[pos] == 0xFF) ++pos;  // fill bytes
      if (pos >= size) return cut_off("inside a marker");
      code = bytes[pos++];
    }
    if (code == kEoi) {
      if (scans == 0) return fail("end-of-image marker before any image data");
      s.defect = coverage.missing();
      return s;
    }
    if (has_no_segment(code)) continue;
    if (code == 0x00 || code == kSoi)
      return fail("invalid marker " + hex_marker(code) + " at byte " + std::to_string(marker_at));
    if (pos + 2 > size) return cut_off("inside marker " + hex_marker(code));
    const std::size_t length = static_cast<std::size_t>(big_endian16(&bytes[pos]));  // counts itself, not the marker
    if (length < 2) {
      return fail("segment " + hex_marker(code) + " at byte " + std::to_string(marker_at) + " has length " +
                  std::to_string(length));
    }
    const std::size_t body_at = pos + 2;
    const bool whole = length - 2 <= size - body_at;
    // What the file holds of the body: a frame header cut short still gives the size.
    const std::span<const std::uint8_t> body = bytes.subspan(body_at, std::min(length - 2, size - body_at));
    if (is_start_of_frame(code)) {
      if (body.size() >= 5) {  // precision, height, width, components
        s.has_size = true;
        s.height = static_cast<std::uint64_t>(big_endian16(body.data() + 1));
        s.width = static_cast<std::uint64_t>(big_endian16(body.data() + 3));
        if (body.size() >= 6) s.channels = body[5];
      }
      coverage.start_frame(code, body);
      if (scans == 0 && whole) {
        if (body.size() < 6) {
          frame_problem = "short frame header";
        } else {
          m.frame_marker = code;
          m.precision = body[0];
          m.height = big_endian16(body.data() + 1);
          m.width = big_endian16(body.data() + 3);
          m.components = body[5];
        }
      }
    }
    if (scans == 0 && whole) {
      if (code == kApp14 && body.size() >= 12 && std::memcmp(body.data(), "Adobe", 5) == 0)
        m.adobe_transform = body[11];
      if (code == kApp0 && body.size() >= 12 && std::memcmp(body.data(), "JFIF", 5) == 0)
        std::copy_n(body.data() + 7, 5, m.jfif_density.begin());  // after "JFIF\0" and the version
      // From the 0xFF just before the code: fill bytes before a marker are not part of the segment.
      if (code > kApp0 && code <= kApp15 && code != kApp14)
        m.copied_segments.push_back(bytes.subspan(body_at - 4, length + 2));
    }
    if (code == kSos) coverage.add_scan(body);
    if (!whole)
      return cut_off("inside segment " + hex_marker(code) + " that starts at byte " + std::to_string(marker_at));
    pos = body_at + (length - 2);
    if (code == kSos) {
      if (scans == 0) {
        m.defect = !frame_problem.empty() ? frame_problem : m.frame_marker == 0 ? "scan before a frame header" : "";
        m.valid = m.defect.empty();
        if (!whole_file) return s;
      }
      ++scans;
      found_in_scan = skip_entropy_coded_data(bytes, pos);
      if (found_in_scan == kNoMarker) return cut_off("inside the compressed data of scan " + std::to_string(scans));
    }
  }
}

}  // namespace

JpegMarkers read_jpeg_markers(std::span<const std::uint8_t> bytes) { return walk(bytes, false).markers; }

JpegStructure walk_jpeg(std::span<const std::uint8_t> bytes) { return walk(bytes, true); }

std::string gpu_decode_obstacle(const JpegMarkers& m) {
  if (!m.valid) return m.defect;
  switch (m.frame_marker) {
    case 0xC0:
    case 0xC1:
    case 0xC2:
      break;  // baseline, extended and progressive Huffman
    case 0xC3:
    case 0xC7:
    case 0xCB:
    case 0xCF:
      return "lossless JPEG";
    case 0xC9:
    case 0xCA:
      return "arithmetic coding";
    default:
      return "hierarchical or arithmetic-coded JPEG (SOF" + std::to_string(m.frame_marker - 0xC0) + ")";
  }
  if (m.precision != 8) return std::to_string(m.precision) + "-bit samples";
  if (m.components == 4) return m.adobe_transform == 2 ? "YCCK colour" : "CMYK colour";
  if (m.components != 1 && m.components != 3) return std::to_string(m.components) + " colour components";
  if (m.components == 3 && m.adobe_transform == 0) return "RGB-coded colour (Adobe transform 0)";
  return {};
}

std::string icc_profile_defect(std::span<const std::uint8_t> profile) {
  constexpr std::size_t kHeaderBytes = 128;
  if (profile.size() < kHeaderBytes)
    return std::to_string(profile.size()) + " bytes, shorter than an ICC profile's 128-byte header";
  const std::uint64_t declared =
      std::uint64_t{profile[0]} << 24 | std::uint64_t{profile[1]} << 16 | std::uint64_t{profile[2]} << 8 | profile[3];
  if (declared != profile.size())
    return "its header declares " + std::to_string(declared) + " bytes, it holds " + std::to_string(profile.size());
  if (std::string_view(reinterpret_cast<const char*>(profile.data()) + 36, 4) != "acsp")
    return "no 'acsp' signature in its header";
  return {};
}

std::string icc_dropped_warning(const std::string& defect) {
  return "ICC profile dropped: not a valid profile (" + defect + ")";
}

bool is_icc_segment(std::span<const std::uint8_t> segment) {
  return segment.size() >= kIccTagAt + kIccTag.size() && segment[1] == 0xE2 &&
         std::string_view(reinterpret_cast<const char*>(segment.data()) + kIccTagAt, kIccTag.size()) == kIccTag;
}

std::string jpeg_icc_defect(const JpegMarkers& markers) {
  // The profile is joined as exiv2 joins it on the host route, so both routes keep the same
  // profiles: chunks in file order, which must be number order (as writers put them; libjpeg's
  // reader joins by number, so the two agree); a lone chunk may hold padding after the profile.
  std::vector<std::uint8_t> profile;
  std::size_t count = 0;
  std::size_t joined = 0;
  for (const auto& segment : markers.copied_segments) {
    if (!is_icc_segment(segment)) continue;
    if (segment.size() < kIccDataAt) return "an ICC_PROFILE segment without its chunk number and count";
    const std::size_t number = segment[kIccDataAt - 2];
    const std::size_t total = segment[kIccDataAt - 1];
    if (joined == 0) count = total;
    if (total != count)
      return "its chunks disagree on their count (" + std::to_string(count) + " and " + std::to_string(total) + ")";
    if (number < 1 || number > count) return "chunk number " + std::to_string(number) + " of " + std::to_string(count);
    if (number != joined + 1)
      return "chunk " + std::to_string(number) + " of " + std::to_string(count) + " where chunk " +
             std::to_string(joined + 1) + " belongs";
    if (segment.size() < kIccDataAt + 4)  // exiv2 refuses a chunk this short
      return "chunk " + std::to_string(number) + " of " + std::to_string(count) + " holds fewer than 4 bytes";
    profile.insert(profile.end(), segment.begin() + static_cast<std::ptrdiff_t>(kIccDataAt), segment.end());
    ++joined;
  }
  if (joined == 0) return {};
  if (joined < count) return "chunk " + std::to_string(joined + 1) + " of " + std::to_string(count) + " is missing";
  if (count == 1) {
    const std::size_t declared =
        std::size_t{profile[0]} << 24 | std::size_t{profile[1]} << 16 | std::size_t{profile[2]} << 8 | profile[3];
    if (declared < profile.size()) profile.resize(declared);  // the padding is not the profile's
  }
  return icc_profile_defect(profile);
}

std::vector<std::span<const std::uint8_t>> jpeg_segments_to_copy(const JpegMarkers& markers,
                                                                 std::vector<std::string>* warnings) {
  const bool cmyk = markers.components == 4;
  const std::string defect = cmyk ? std::string() : jpeg_icc_defect(markers);
  const bool drop_icc = cmyk || !defect.empty();
  if (!defect.empty() && warnings != nullptr) warnings->push_back(icc_dropped_warning(defect));
  std::vector<std::span<const std::uint8_t>> kept;
  for (const auto& segment : markers.copied_segments)
    if (!drop_icc || !is_icc_segment(segment)) kept.push_back(segment);
  return kept;
}

std::vector<std::uint8_t> insert_app_segments(std::span<const std::uint8_t> encoded,
                                              const std::vector<std::span<const std::uint8_t>>& segments) {
  std::size_t at = 2;  // after SOI
  if (encoded.size() >= 6 && encoded[2] == 0xFF && encoded[3] == kApp0)
    at = 4 + static_cast<std::size_t>(big_endian16(&encoded[4]));
  if (at > encoded.size()) at = 2;
  std::vector<std::uint8_t> out(encoded.begin(), encoded.begin() + static_cast<std::ptrdiff_t>(at));
  for (const auto& segment : segments) out.insert(out.end(), segment.begin(), segment.end());
  out.insert(out.end(), encoded.begin() + static_cast<std::ptrdiff_t>(at), encoded.end());
  return out;
}

std::vector<std::uint8_t> with_jfif_density(std::vector<std::uint8_t> encoded, const JpegMarkers& source) {
  const std::array<std::uint8_t, 5>& d = source.jfif_density;
  if ((d[0] != 1 && d[0] != 2) || encoded.size() < 4) return encoded;
  if (encoded.size() >= 18 && encoded[2] == 0xFF && encoded[3] == kApp0 && std::memcmp(&encoded[6], "JFIF", 5) == 0) {
    std::copy(d.begin(), d.end(), encoded.begin() + 13);
    return encoded;
  }
  // APP0 length 16: "JFIF\0", version 1.01, the density, no thumbnail.
  const std::array<std::uint8_t, 18> app0{0xFF, kApp0, 0,    16,   'J',  'F',  'I',  'F', 0,
                                          1,    1,     d[0], d[1], d[2], d[3], d[4], 0,   0};
  encoded.insert(encoded.begin() + 2, app0.begin(), app0.end());
  return encoded;
}

}  // namespace cuconv::codec
