// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the metadata path (src/codec/metadata.cpp, libexiv2): EXIF, ICC and XMP
// read from an untrusted input file, its orientation taken, --auto-orient's rewrite of the EXIF
// block, and the metadata written into a small encoded PNG, JPEG and TIFF as an output would
// carry it. Reading returns metadata or nothing; writing returns the file or throws
// cuconv::Error{output}. Anything else (another exception, a crash, a sanitizer report) is a bug.
#include "codec/metadata.hpp"
#include "fuzz_bytes_file.hpp"

#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

/// A 3x2 colour image encoded as `extension`, made once.
const std::vector<unsigned char>& tiny(const char* extension) {
  static std::vector<std::vector<unsigned char>> cache(3);
  const int slot = extension[1] == 'p' ? 0 : extension[1] == 'j' ? 1 : 2;
  if (cache[static_cast<std::size_t>(slot)].empty())
    cv::imencode(extension, cv::Mat(2, 3, CV_8UC3, cv::Scalar(10, 200, 30)), cache[static_cast<std::size_t>(slot)]);
  return cache[static_cast<std::size_t>(slot)];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cuconv::ImageMetadata metadata = cuconv::read_metadata(cuconv::fuzz::as_file(data, size));
  const int orientation = cuconv::exif_orientation(metadata);
  if (orientation < 1 || orientation > 8) std::abort();
  cv::Mat image(2, 3, CV_8UC3, cv::Scalar::all(7));
  cuconv::auto_orient(image, metadata);
  for (const char* extension : {".png", ".jpg", ".tif"}) {
    try {
      const std::vector<unsigned char> out =
          cuconv::codec::embed_metadata(std::string("out") + extension, tiny(extension), metadata);
      if (out.empty()) std::abort();
    } catch (const cuconv::Error& e) {
      if (e.kind() != cuconv::ErrorKind::output) std::abort();
    }
  }
  return 0;
}
