// SPDX-License-Identifier: Apache-2.0
#pragma once
// JPEG decoding with libjpeg directly, so that its warnings reach cuconv: libjpeg decodes a file
// whose compressed data stops early (cut inside a scan, then closed with an end-of-image marker)
// and only warns, which OpenCV's decoder passes over.
#include <opencv2/core/mat.hpp>

#include <optional>
#include <string>

namespace cuconv::codec {

/// The JPEG at `path` decoded as OpenCV's imread(IMREAD_UNCHANGED) decodes it (8-bit gray, or
/// BGR from YCbCr/RGB; same DCT and upsampling), or nullopt for colour spaces left to OpenCV
/// (CMYK, YCCK) and files libjpeg cannot start on. Throws Error{bad_input} naming `path` when
/// the compressed data ends before the image does ("premature end of data segment").
[[nodiscard]] std::optional<cv::Mat> decode_jpeg(const std::string& path);

}  // namespace cuconv::codec
