// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one JPEG marker walk (ITU-T T.81 Annex B): markers FFxx, segments with a 2-byte big-endian
// length that counts itself, and after each SOS entropy-coded data up to the next marker. One walk
// over a file's bytes in memory gives both what read_image's header check needs (the size the
// frame header claims, whether the file is whole: codec::inspect_jpeg) and what the GPU JPEG
// route needs before decoding (the frame, to tell whether nvJPEG can decode it, and the APP
// segments (EXIF, ICC profile, XMP ...) to copy into the output). Also the one judgement of an ICC
// profile, which the host route (read_metadata) and the GPU route (jpeg_segments_to_copy) share,
// so both drop the same damaged profiles with the same warning. Host code, no CUDA.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cuconv::codec {

/// Whether `code` (the byte after 0xFF) starts a frame: SOF0..SOF15 except DHT (C4), JPG (C8)
/// and DAC (CC), which share the range.
[[nodiscard]] constexpr bool is_start_of_frame(int code) noexcept {
  return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC;
}

/// The markers of one JPEG stream up to its first scan.
struct JpegMarkers {
  bool valid = false;    ///< starts with SOI and has a frame header before the first scan
  std::string defect;    ///< why not valid
  int frame_marker = 0;  ///< 0xC0 .. 0xCF: the SOFn code (coding process)
  int precision = 0;     ///< bits per sample
  int width = 0;
  int height = 0;
  int components = 0;
  int adobe_transform = -1;  ///< APP14 "Adobe" colour transform flag; -1: no such segment
  /// APP1..APP13 and APP15 segments, marker and length bytes included, in file order: what is
  /// copied into the output. APP0 (JFIF, written by the encoder) and APP14 (Adobe: it tells a
  /// decoder how colours were coded, which the new encoding decides) are left out.
  std::vector<std::span<const std::uint8_t>> copied_segments;
  /// The JFIF APP0's density: units (1 inch, 2 cm, 0 none), X and Y (big-endian); all 0 without one.
  std::array<std::uint8_t, 5> jfif_density{};
};

/// What the walk of a whole JPEG file finds: its markers up to the first scan, and whether the
/// rest is whole.
struct JpegStructure {
  JpegMarkers markers;
  /// The last frame header's size and components, as far as the file holds them (a file cut
  /// inside its frame header still says its size).
  bool has_size = false;
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  int channels = 0;  ///< 0: not read
  /// Why the file is truncated or corrupt, with the byte offsets; empty when it is whole: every
  /// segment and scan inside the file, closed by EOI, and every DCT coefficient of every
  /// component sent in full by its scans (a progressive file cut after a scan and closed with
  /// EOI is not, and libjpeg decodes it with only a warning).
  std::string defect;
};

/// Walks the markers of `bytes` up to the first SOS (no entropy-coded data is read).
[[nodiscard]] JpegMarkers read_jpeg_markers(std::span<const std::uint8_t> bytes);

/// Walks the whole of `bytes`, entropy-coded data included, to EOI.
[[nodiscard]] JpegStructure walk_jpeg(std::span<const std::uint8_t> bytes);

/// Why nvJPEG cannot decode this file into 8-bit BGR or gray pixels as OpenCV would (lossless or
/// arithmetic coding, not 8-bit, CMYK/YCCK, RGB-coded ...); empty when it can.
[[nodiscard]] std::string gpu_decode_obstacle(const JpegMarkers& markers);

/// Why `profile` is not an ICC profile (ICC.1 section 7.2: a 128-byte header whose first field is
/// the profile's size and whose bytes 36-39 are "acsp"), or "" when its header is sound.
[[nodiscard]] std::string icc_profile_defect(std::span<const std::uint8_t> profile);

/// The warning for a profile dropped for `defect` (icc_profile_defect, jpeg_icc_defect): one
/// wording on every route. "ICC profile dropped: not a valid profile (...)".
[[nodiscard]] std::string icc_dropped_warning(const std::string& defect);

/// Whether `segment` (marker and length bytes included) is an APP2 "ICC_PROFILE" chunk.
[[nodiscard]] bool is_icc_segment(std::span<const std::uint8_t> segment);

/// Why the ICC profile that `markers`' APP2 chunks hold is not a sound one: a chunk without its
/// number and count or with fewer than 4 bytes, chunks that disagree on the count, a number out
/// of order, repeated, missing or beyond the count (ICC.1 Annex B.4), or icc_profile_defect of
/// the profile they make (a lone chunk may be padded after the profile its header sizes); "" when
/// sound, or when the file holds no ICC profile. The same rules as exiv2's on the host route.
[[nodiscard]] std::string jpeg_icc_defect(const JpegMarkers& markers);

/// The APP segments of `markers` to copy into a JPEG output, in file order: all of
/// copied_segments except the ICC profile's chunks when the profile is of a CMYK file (it does
/// not describe the BGR result; dropped silently) or damaged (jpeg_icc_defect; dropped with an
/// icc_dropped_warning line appended to `warnings`, when not nullptr). The EXIF, XMP and other
/// segments beside a damaged profile are kept, as on the host route.
[[nodiscard]] std::vector<std::span<const std::uint8_t>> jpeg_segments_to_copy(const JpegMarkers& markers,
                                                                               std::vector<std::string>* warnings);

/// `encoded` (a JPEG stream from an encoder) with `segments` inserted after its SOI and, when
/// there is one, its JFIF APP0 segment (the order JFIF and EXIF readers expect).
[[nodiscard]] std::vector<std::uint8_t> insert_app_segments(std::span<const std::uint8_t> encoded,
                                                            const std::vector<std::span<const std::uint8_t>>& segments);

/// `encoded` (an encoder's JPEG) with `source`'s JFIF density: written into its JFIF APP0, or a
/// JFIF APP0 added after SOI when it has none; unchanged when `source` gives no density in a unit.
/// The GPU codec's route, whose encoder knows no density (the host route's libjpeg writes it).
[[nodiscard]] std::vector<std::uint8_t> with_jfif_density(std::vector<std::uint8_t> encoded, const JpegMarkers& source);

}  // namespace cuconv::codec
