// SPDX-License-Identifier: Apache-2.0
#pragma once
// What an image file's own bytes say before anything is decoded: the size its header claims and
// whether its structure is whole. read_image uses it to refuse huge and truncated files up front.
#include <cstdint>
#include <optional>
#include <string>

namespace cuconv::detail {

/// The header of a PNG, JPEG, TIFF or BMP file, read without decoding any pixels.
struct ImageHeader {
  std::string format;        ///< "PNG", "JPEG", "TIFF" or "BMP"
  bool has_size = false;     ///< the header was whole enough to give the size
  std::uint64_t width = 0;   ///< as the header claims it
  std::uint64_t height = 0;
  int channels = 0;          ///< samples per pixel as the header claims them (TIFF, JPEG); 0: not read
  std::string defect;        ///< why the file is truncated or corrupt; empty when no defect was found
};

/// Reads the header of the file at `path`. For PNG and JPEG it also walks the chunks or markers
/// to the end marker: libjpeg returns a truncated file's partial image with only a warning, and
/// for PNG the walk says where the file ends instead of libpng's bare "Read Error". For JPEG it
/// also checks that the scans sent every coefficient of every component in full, which a
/// progressive file cut after a scan and closed with EOI does not.
/// nullopt when the file starts like none of these formats (the decoder then judges it alone).
/// Throws Error{bad_input} when the file cannot be opened.
[[nodiscard]] std::optional<ImageHeader> inspect_image_file(const std::string& path);

}  // namespace cuconv::detail
