// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the GPU JPEG path needs from a JPEG file's markers before decoding: the frame (coding
// process, precision, components) to tell whether nvJPEG can decode it, and the APP segments
// (EXIF, ICC profile, XMP ...) to copy into the output. Host code, no CUDA; the structural check
// for truncated files stays with detail::inspect_image_file.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cuconv::codec {

/// The markers of one JPEG stream up to its first scan.
struct JpegMarkers {
  bool valid = false;             ///< starts with SOI and has a frame header before the first scan
  std::string defect;             ///< why not valid
  int frame_marker = 0;           ///< 0xC0 .. 0xCF: the SOFn code (coding process)
  int precision = 0;              ///< bits per sample
  int width = 0;
  int height = 0;
  int components = 0;
  int adobe_transform = -1;       ///< APP14 "Adobe" colour transform flag; -1: no such segment
  /// APP1..APP13 and APP15 segments, marker and length bytes included, in file order: what is
  /// copied into the output. APP0 (JFIF, written by the encoder) and APP14 (Adobe: it tells a
  /// decoder how colours were coded, which the new encoding decides) are left out.
  std::vector<std::span<const std::uint8_t>> copied_segments;
};

/// Walks the markers of `bytes` up to the first SOS (no entropy-coded data is read).
[[nodiscard]] JpegMarkers read_jpeg_markers(std::span<const std::uint8_t> bytes);

/// Why nvJPEG cannot decode this file into 8-bit BGR or gray pixels as OpenCV would (lossless or
/// arithmetic coding, not 8-bit, CMYK/YCCK, RGB-coded ...); empty when it can.
[[nodiscard]] std::string gpu_decode_obstacle(const JpegMarkers& markers);

/// `encoded` (a JPEG stream from an encoder) with `segments` inserted after its SOI and, when
/// there is one, its JFIF APP0 segment (the order JFIF and EXIF readers expect).
[[nodiscard]] std::vector<std::uint8_t> insert_app_segments(std::span<const std::uint8_t> encoded,
                                                            const std::vector<std::span<const std::uint8_t>>& segments);

}  // namespace cuconv::codec
