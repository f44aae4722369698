// SPDX-License-Identifier: Apache-2.0
#pragma once
// TIFF encoding with libtiff directly: OpenCV's encoder writes 3-channel float with the lossy
// SGILOG codec and cannot write 3- or 4-channel 16S, so every TIFF cuconv writes goes through here.
#include <opencv2/core/mat.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace cuconv::codec {

/// TIFF compression codecs cuconv writes; all lossless.
enum class TiffCompression { none, lzw, deflate };

/// "none", "lzw", "deflate" -> `out`; false (and `out` unchanged) for anything else.
bool parse_tiff_compression(std::string_view text, TiffCompression& out);

/// Encodes `image` (1, 3 or 4 channels of 8U, 16U, 16S or 32F; channels in OpenCV's BGR(A)
/// order) as a single-image TIFF in memory: RGB(A) or grayscale, the fourth channel an extra
/// sample. Deflate and LZW use a predictor (floating-point for 32F, horizontal otherwise), so the
/// file decodes to exactly the same values. A positive `dpi_x` and `dpi_y` become X/YResolution
/// in inches (exiv2 keeps these image tags as the encoder wrote them, never from EXIF). Throws
/// Error{output} naming `path` when libtiff fails.
[[nodiscard]] std::vector<unsigned char> encode_tiff(const std::string& path, const cv::Mat& image,
                                                     TiffCompression compression, double dpi_x = 0, double dpi_y = 0);

}  // namespace cuconv::codec
