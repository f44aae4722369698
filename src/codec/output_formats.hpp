// SPDX-License-Identifier: Apache-2.0
#pragma once
// The output formats: what each stores without converting, which encoder writes it, and which
// encoder options and metadata it takes. image_io.cpp checks and encodes every output by this
// table; a new format is a row here (docs/extending.md).
#include <opencv2/core/hal/interface.h>  // CV_8U ...

#include <array>
#include <string_view>

namespace cuconv::codec {

/// What --compression takes for a format.
enum class CompressionKind { none, zlib_level, tiff_codec };

/// Who writes a format: OpenCV's codecs (loaded on first use, opencv_codecs.hpp) or a library of
/// our own call (jpeg_encode.hpp, tiff_codec.hpp).
enum class Encoder { opencv, libjpeg, libtiff };

/// Which metadata blocks a format keeps (written with libexiv2).
struct MetadataKept {
  bool exif, icc, xmp, dpi;  ///< dpi: the encoder writes a resolution (TIFF, JPEG) or encode_image adds pHYs (PNG)
};
inline constexpr MetadataKept kAllMetadata{true, true, true, true};
inline constexpr MetadataKept kNoMetadata{false, false, false, false};

/// What each output format stores without converting, and which encoder options and metadata it
/// takes. Depths and alpha from the OpenCV 4.6 encoders' isFormatSupported() (anything else is
/// converted to 8 bits or loses alpha without a word); TIFF is written by libtiff (tiff_codec.hpp).
/// WebP keeps no ICC profile: exiv2 0.27 writes it into a malformed chunk. The PNM formats each
/// take their own channel counts (OpenCV's encoder refuses the others only once the work is done);
/// PBM stores one bit per pixel, so only a two-level image (0 and 255) goes there unchanged.
struct FormatCapability {
  std::string_view extensions;  ///< space-separated, lower case, with dots
  std::array<int, 4> depths;    ///< supported depths, -1 padded
  std::array<int, 3> channels;  ///< supported channel counts, -1 padded
  bool quality;                 ///< takes --quality
  CompressionKind compression;  ///< what --compression takes
  MetadataKept metadata;
  std::string_view instead;  ///< PNM: what to use for the channel counts it cannot hold
  bool two_level = false;    ///< PBM: every value must be 0 or 255 (check_two_level)
  Encoder encoder = Encoder::opencv;
};
inline constexpr std::array<int, 3> kAnyChannels{1, 3, 4};
inline constexpr std::array<int, 3> kNoAlpha{1, 3, -1};
inline constexpr std::array<FormatCapability, 11> kFormats{{
    {".png", {CV_8U, CV_16U, -1, -1}, kAnyChannels, false, CompressionKind::zlib_level, kAllMetadata, {}},
    {".jpg .jpeg .jpe",
     {CV_8U, -1, -1, -1},
     kNoAlpha,
     true,
     CompressionKind::none,
     kAllMetadata,
     {},
     false,
     Encoder::libjpeg},
    {".bmp .dib", {CV_8U, -1, -1, -1}, kAnyChannels, false, CompressionKind::none, kNoMetadata, {}},
    {".webp", {CV_8U, -1, -1, -1}, kAnyChannels, true, CompressionKind::none, {true, false, true, false}, {}},
    {".pgm",
     {CV_8U, CV_16U, -1, -1},
     {1, -1, -1},
     false,
     CompressionKind::none,
     kNoMetadata,
     "use .ppm for colour, or .png or .tif"},
    {".ppm",
     {CV_8U, CV_16U, -1, -1},
     {3, -1, -1},
     false,
     CompressionKind::none,
     kNoMetadata,
     "use .pgm for gray, or .png or .tif"},
    {".pnm", {CV_8U, CV_16U, -1, -1}, kNoAlpha, false, CompressionKind::none, kNoMetadata, {}},
    {".pbm",
     {CV_8U, -1, -1, -1},
     {1, -1, -1},
     false,
     CompressionKind::none,
     kNoMetadata,
     "it holds black and white only; use .pgm for gray, .ppm for colour",
     true},
    {".tif .tiff",
     {CV_8U, CV_16U, CV_16S, CV_32F},
     kAnyChannels,
     false,
     CompressionKind::tiff_codec,
     kAllMetadata,
     {},
     false,
     Encoder::libtiff},
    {".exr", {CV_32F, -1, -1, -1}, kAnyChannels, false, CompressionKind::none, kNoMetadata, {}},
    {".pfm", {CV_32F, -1, -1, -1}, kNoAlpha, false, CompressionKind::none, kNoMetadata, {}},
}};

}  // namespace cuconv::codec
