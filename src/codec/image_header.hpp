// SPDX-License-Identifier: Apache-2.0
#pragma once
// What an image file's own bytes say before anything is decoded: the size its header claims and
// whether its structure is whole. read_image uses it to refuse huge and truncated files up front.
#include "codec/jpeg_markers.hpp"

#include <cuconv/image_io.hpp>  // ReadLimits

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cuconv::codec {

/// The header of a PNG, JPEG, TIFF or BMP file, read without decoding any pixels.
struct ImageHeader {
  std::string format;       ///< "PNG", "JPEG", "TIFF" or "BMP"
  bool has_size = false;    ///< the header was whole enough to give the size
  std::uint64_t width = 0;  ///< as the header claims it
  std::uint64_t height = 0;
  int channels = 0;    ///< samples per pixel as the header claims them (TIFF, JPEG); 0: not read
  std::string defect;  ///< why the file is truncated or corrupt; empty when no defect was found
};

/// Reads the header of the file at `path`. For PNG and JPEG it also walks the chunks or markers
/// to the end marker: libjpeg returns a truncated file's partial image with only a warning, and
/// for PNG the walk says where the file ends instead of libpng's bare "Read Error". For JPEG it
/// also checks that the scans sent every coefficient of every component in full, which a
/// progressive file cut after a scan and closed with EOI does not.
/// nullopt when the file starts like none of these formats (the decoder then judges it alone).
/// Throws Error{bad_input} when the file cannot be opened.
[[nodiscard]] std::optional<ImageHeader> inspect_image_file(const std::string& path);

/// Refuses an image of `width` x `height` pixels over `limits`: Error{bad_input} naming `path`;
/// `what` says where the size comes from ("PNG header claims", "image has").
void check_pixel_count(const std::string& path, const std::string& what, std::uint64_t width, std::uint64_t height,
                       const ReadLimits& limits);

/// Refuses what `header` already shows, before a decoder allocates anything: no pixels, more
/// than `limits`, a truncated or corrupt structure, an unsupported channel count (read_image's
/// messages). Error{bad_input} naming `path`.
void check_header(const std::string& path, const ImageHeader& header, const ReadLimits& limits);

/// Refuses a decoded image that holds less than `header` claims: other rows and columns than the
/// header's size (either way round, as an Orientation tag may turn it), or gray from a header
/// that claims colour samples (a 4-sample CMYK image may become 3 colour channels). A decoder
/// that stops early may return a smaller image without an error. Error{bad_input} naming `path`.
void check_decoded_size(const std::string& path, const ImageHeader& header, int rows, int cols, int channels);

/// The header of a JPEG stream in memory, as inspect_image_file reads a JPEG file's, and from the
/// same walk (codec::walk_jpeg) its markers up to the first scan into `markers` when given: what
/// the GPU JPEG route needs, with the file's bytes walked once.
[[nodiscard]] ImageHeader inspect_jpeg(std::span<const std::uint8_t> bytes, codec::JpegMarkers* markers = nullptr);

}  // namespace cuconv::codec

namespace cuconv::codec {

/// A JPEG file's bytes and its markers, read and walked once: the GPU JPEG route's input. Moved,
/// never copied: the markers' segments point into `bytes`.
struct JpegFile {
  std::vector<std::uint8_t> bytes;
  JpegMarkers markers;
  JpegFile() = default;
  JpegFile(JpegFile&&) noexcept = default;
  JpegFile& operator=(JpegFile&&) noexcept = default;
  JpegFile(const JpegFile&) = delete;
  JpegFile& operator=(const JpegFile&) = delete;
};

/// What is at an input's path, as stat(2) with links followed tells.
enum class InputKind { none, regular, directory, other };

/// read_image's refusals of an input by what is at its path, before anything opens it: stat's
/// `stat_error` (0, or its errno: "no such file", "cannot open: ... (a symbolic link loop)"), a
/// folder, or anything but a regular file (a FIFO, a socket, a device). Throws Error{bad_input}.
/// The engine asks its Files (a served command's client) and calls this with the answer.
void check_input_file(const std::string& path, int stat_error, InputKind kind);

/// `path`'s bytes, refused as read_image refuses a file and with its messages (missing, a folder,
/// unreadable, empty, truncated or corrupt, over `max_pixels`), and its markers from the same walk
/// (codec::inspect_jpeg). Throws Error{bad_input}. Defined in image_io.cpp, beside read_image.
[[nodiscard]] JpegFile read_walked_jpeg_file(const std::string& path, std::uint64_t max_pixels);

}  // namespace cuconv::codec
