// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for read_image's header walks (src/codec/image_header.cpp): PNG chunks, JPEG
// markers and entropy-coded scans (progressive ones included; src/codec/jpeg_markers.cpp), TIFF
// and BigTIFF IFDs, BMP. These
// read untrusted files before any decoder does. The walk returns nothing (not one of these
// formats), a header, or throws cuconv::Error; a header that claims a size has both sides, and a
// defect is a message. Anything else (another exception, a crash, a sanitizer report) is a bug.
#include "codec/image_header.hpp"
#include "fuzz_bytes_file.hpp"

#include <cuconv/error.hpp>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = cuconv::fuzz::as_file(data, size);
  try {
    const auto header = cuconv::codec::inspect_image_file(path);
    if (header) {
      const bool known =
          header->format == "PNG" || header->format == "JPEG" || header->format == "TIFF" || header->format == "BMP";
      if (!known) std::abort();
    }
  } catch (const cuconv::Error&) {
    // Refused: the expected outcome for most of what the fuzzer makes.
  }
  return 0;
}
