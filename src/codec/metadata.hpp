#pragma once
// Metadata into an encoded image (libexiv2); the public side is in include/cuconv/image_io.hpp.
#include <cuconv/image_io.hpp>

#include <string>
#include <vector>

namespace cuconv::detail {

/// `encoded` (a whole PNG, JPEG, WebP or TIFF file) with `metadata`'s EXIF, ICC and XMP added.
/// The encoder's own tags win where both have one (a TIFF's size and layout). Throws
/// Error{output} naming `path` when exiv2 cannot write them.
[[nodiscard]] std::vector<unsigned char> embed_metadata(const std::string& path, std::vector<unsigned char> encoded,
                                                        const ImageMetadata& metadata);

}  // namespace cuconv::detail
