// SPDX-License-Identifier: Apache-2.0
#pragma once
// Metadata into an encoded image (libexiv2); the public side is in include/cuconv/image_io.hpp.
#include <cuconv/image_io.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace cuconv::codec {

/// `encoded` (a whole PNG, JPEG, WebP or TIFF file) with `metadata`'s EXIF, ICC and XMP added.
/// The encoder's own tags win where both have one (a TIFF's size and layout). Throws
/// Error{output} naming `path` when exiv2 cannot write them.
[[nodiscard]] std::vector<unsigned char> embed_metadata(const std::string& path, std::vector<unsigned char> encoded,
                                                        const ImageMetadata& metadata);

/// The name embed_metadata gives a PNG's ICC profile: the iCCP keyword, 1-79 Latin-1 characters.
inline constexpr std::string_view kPngIccProfileName = "ICC profile";

/// `png` (a whole PNG file) with an iCCP chunk whose profile name is empty renamed
/// kPngIccProfileName, its CRC recomputed; any other file comes back unchanged.
[[nodiscard]] std::vector<unsigned char> name_png_icc_profile(std::vector<unsigned char> png);

/// `png` (a whole PNG file) with a pHYs chunk after its IHDR saying `dpi_x` by `dpi_y` dots per inch
/// (stored per metre, as PNG counts them); unchanged when either is not positive or it has one.
[[nodiscard]] std::vector<unsigned char> with_png_density(std::vector<unsigned char> png, double dpi_x, double dpi_y);

/// Turns `image` upright for an EXIF or TIFF Orientation `orientation` (1-8: how the stored rows
/// and columns map to the upright picture); false, and `image` unchanged, for 1 or any other value.
/// auto_orient does this for the EXIF tag, the TIFF reader for the file's own tag.
bool orient_upright(cv::Mat& image, int orientation);

}  // namespace cuconv::codec
