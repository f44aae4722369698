// SPDX-License-Identifier: Apache-2.0
#pragma once
// TIFF with libtiff directly. OpenCV's encoder writes 3-channel float with the lossy SGILOG codec
// and cannot write 3- or 4-channel 16S, and OpenCV 4.6's decoder leaves two thirds of a planar
// 16-bit RGB file zero: every TIFF cuconv writes or reads goes through here.
#include <opencv2/core/mat.hpp>

#include <span>
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

/// Decodes the first image of the TIFF file at `path` as its samples are stored: gray, BGR or BGRA
/// (the fourth sample an extra one) of 8 or 16 bits or 32-bit float, and so 8S, 16S, 32S and 64F,
/// which read_image names as unsupported; contiguous or planar, strips or tiles, any compression
/// libtiff decodes. 1-bit gray becomes 8-bit 0 and 255 (white 255); palette, CMYK, YCbCr, CIE
/// L*a*b* and 2- or 4-bit files come through libtiff's 8-bit RGBA reader. The TIFF's Orientation
/// is applied. Error{bad_input} naming `path`: a layout it cannot read (named), or a strip or tile
/// that holds or decodes to fewer bytes than its rows need, or any warning libtiff gives while
/// reading the pixels (a codec that runs out of data may only warn).
[[nodiscard]] cv::Mat decode_tiff(const std::string& path);

/// decode_tiff of a TIFF file's `bytes` in memory (the caller keeps them alive); `name` starts
/// the Error's message, none when empty.
[[nodiscard]] cv::Mat decode_tiff(const std::string& name, std::span<const unsigned char> bytes);

}  // namespace cuconv::codec
