// SPDX-License-Identifier: Apache-2.0
#pragma once
// An image file's bytes in memory decoded by the reader read_image gives a file of that format:
// TIFF by libtiff (whole or refused), anything else by OpenCV. The GPU codec route holds a file
// named .jpg that is no JPEG stream this way, and OpenCV 4.6 would leave planes of a planar TIFF
// zero.
#include <opencv2/core/mat.hpp>

#include <span>
#include <string>

namespace cuconv::codec {

/// Whether `bytes` start as a TIFF or BigTIFF file does (byte order and version).
[[nodiscard]] bool is_tiff(std::span<const unsigned char> bytes);

/// Decodes `bytes` as they are stored (IMREAD_UNCHANGED); `name` starts the Error's message, none
/// when empty (a caller that prefixes the file's name itself).
/// Error{bad_input} when no decoder reads them whole; the TIFF reader's refusals (tiff_codec.hpp).
/// `decoder`, when given, is set to the reader's name ("libtiff", "opencv"), as read_image's.
[[nodiscard]] cv::Mat decode_image_bytes(const std::string& name, std::span<const unsigned char> bytes,
                                         std::string* decoder = nullptr);

}  // namespace cuconv::codec
