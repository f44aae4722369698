// SPDX-License-Identifier: Apache-2.0
#pragma once
// JPEG encoding with libjpeg directly: the same bytes as OpenCV's imencode(".jpg") (baseline,
// 4:2:0 for colour, JFIF header, no restart markers), without loading OpenCV's image codecs,
// whose dependencies cost a process of its own most of its start-up (codec/opencv_codecs.hpp).
#include <opencv2/core/mat.hpp>

#include <optional>
#include <vector>

namespace cuconv::codec {

/// `image` (8-bit gray, BGR or BGRA, alpha dropped) as OpenCV 4's imencode(".jpg", image,
/// {IMWRITE_JPEG_QUALITY, quality}) writes it; nullopt for other depths and channel counts, which
/// the caller leaves to OpenCV. A positive `dpi_x` and `dpi_y` go into the JFIF header as dots
/// per inch. Throws Error{output} when libjpeg fails.
[[nodiscard]] std::optional<std::vector<unsigned char>> encode_jpeg(const cv::Mat& image, int quality, double dpi_x = 0,
                                                                    double dpi_y = 0);

}  // namespace cuconv::codec
