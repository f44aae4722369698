// SPDX-License-Identifier: Apache-2.0
// JPEG marker walk for the GPU codec (ITU-T T.81 B.1: markers FFxx, segments with a 2-byte
// big-endian length that counts itself).
#include "codec/jpeg_markers.hpp"

#include <cstring>

namespace cuconv::codec {

namespace {

constexpr int kSoi = 0xD8;
constexpr int kSos = 0xDA;
constexpr int kApp0 = 0xE0;
constexpr int kApp14 = 0xEE;
constexpr int kApp15 = 0xEF;

bool is_frame(int code) { return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC; }
bool has_no_segment(int code) { return code == 0x01 || (code >= 0xD0 && code <= 0xD7); }  // TEM, RSTn

int big_endian16(const std::uint8_t* p) { return (p[0] << 8) | p[1]; }

}  // namespace

JpegMarkers read_jpeg_markers(std::span<const std::uint8_t> bytes) {
  JpegMarkers m;
  if (bytes.size() < 4 || bytes[0] != 0xFF || bytes[1] != kSoi) {
    m.defect = "not a JPEG stream (no SOI marker)";
    return m;
  }
  std::size_t pos = 2;
  while (true) {
    while (pos < bytes.size() && bytes[pos] == 0xFF && pos + 1 < bytes.size() && bytes[pos + 1] == 0xFF) ++pos;  // fill bytes
    if (pos + 2 > bytes.size() || bytes[pos] != 0xFF) {
      m.defect = "ends or breaks before the first scan (offset " + std::to_string(pos) + ")";
      return m;
    }
    const int code = bytes[pos + 1];
    if (has_no_segment(code)) {
      pos += 2;
      continue;
    }
    if (pos + 4 > bytes.size()) {
      m.defect = "truncated marker segment";
      return m;
    }
    const std::size_t length = static_cast<std::size_t>(big_endian16(&bytes[pos + 2]));
    if (length < 2 || pos + 2 + length > bytes.size()) {
      m.defect = "marker segment runs past the end of the file";
      return m;
    }
    const std::uint8_t* body = &bytes[pos + 4];
    const std::size_t body_length = length - 2;
    if (code == kSos) {
      m.valid = m.frame_marker != 0;
      if (!m.valid) m.defect = "scan before a frame header";
      return m;
    }
    if (is_frame(code)) {
      if (body_length < 6) {
        m.defect = "short frame header";
        return m;
      }
      m.frame_marker = code;
      m.precision = body[0];
      m.height = big_endian16(body + 1);
      m.width = big_endian16(body + 3);
      m.components = body[5];
    } else if (code == kApp14 && body_length >= 12 && std::memcmp(body, "Adobe", 5) == 0) {
      m.adobe_transform = body[11];
    }
    if (code > kApp0 && code <= kApp15 && code != kApp14)
      m.copied_segments.push_back(bytes.subspan(pos, 2 + length));
    pos += 2 + length;
  }
}

std::string gpu_decode_obstacle(const JpegMarkers& m) {
  if (!m.valid) return m.defect;
  switch (m.frame_marker) {
    case 0xC0: case 0xC1: case 0xC2: break;  // baseline, extended and progressive Huffman
    case 0xC3: case 0xC7: case 0xCB: case 0xCF: return "lossless JPEG";
    case 0xC9: case 0xCA: return "arithmetic coding";
    default: return "hierarchical or arithmetic-coded JPEG (SOF" + std::to_string(m.frame_marker - 0xC0) + ")";
  }
  if (m.precision != 8) return std::to_string(m.precision) + "-bit samples";
  if (m.components == 4) return m.adobe_transform == 2 ? "YCCK colour" : "CMYK colour";
  if (m.components != 1 && m.components != 3) return std::to_string(m.components) + " colour components";
  if (m.components == 3 && m.adobe_transform == 0) return "RGB-coded colour (Adobe transform 0)";
  return {};
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

}  // namespace cuconv::codec
