// SPDX-License-Identifier: Apache-2.0
// Image bytes in memory to pixels with read_image's choice of decoder (memory_image.hpp).
#include "codec/memory_image.hpp"

#include <cuconv/error.hpp>

#include "codec/opencv_codecs.hpp"
#include "codec/tiff_codec.hpp"

#include <opencv2/imgcodecs.hpp>  // IMREAD_UNCHANGED

#include <algorithm>
#include <array>

namespace cuconv::codec {

bool is_tiff(std::span<const unsigned char> bytes) {
  constexpr std::array<std::array<unsigned char, 4>, 4> kMagic{
      {{'I', 'I', 42, 0}, {'M', 'M', 0, 42}, {'I', 'I', 43, 0}, {'M', 'M', 0, 43}}};
  return bytes.size() >= 4 && std::any_of(kMagic.begin(), kMagic.end(),
                                          [&](const auto& m) { return std::equal(m.begin(), m.end(), bytes.begin()); });
}

cv::Mat decode_image_bytes(const std::string& name, std::span<const unsigned char> bytes, std::string* decoder) {
  const bool tiff = is_tiff(bytes);
  if (decoder != nullptr) *decoder = tiff ? "libtiff" : "opencv";
  cv::Mat image = tiff ? decode_tiff(name, bytes) : opencv_imdecode(bytes, cv::IMREAD_UNCHANGED);
  if (image.empty())
    throw Error(ErrorKind::bad_input,
                (name.empty() ? std::string() : name + ": ") +
                    "cannot decode image (corrupt, truncated or not an image format OpenCV reads)");
  return image;
}

}  // namespace cuconv::codec
