// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the GPU JPEG route's marker walk (src/codec/jpeg_markers.cpp): the frame
// header and the APP segments that are copied into the output, read from untrusted files. A valid
// walk's segments lie inside the input and start with their marker; gpu_decode_obstacle must hold
// on whatever the walk returns, and insert_app_segments on a stream the walk found valid. Anything
// else (a crash, a sanitizer report) is a bug.
#include "codec/jpeg_markers.hpp"

#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const cuconv::codec::JpegMarkers markers = cuconv::codec::read_jpeg_markers(bytes);
  std::size_t copied = 0;
  for (const auto segment : markers.copied_segments) {
    if (segment.data() < data || segment.data() + segment.size() > data + size) std::abort();
    if (segment.size() < 4 || segment[0] != 0xFF) std::abort();
    copied += segment.size();
  }
  if (markers.valid && (markers.width < 0 || markers.height < 0 || markers.components < 0)) std::abort();
  (void)cuconv::codec::gpu_decode_obstacle(markers);
  // Splice the segments into the input itself (a stream that starts with SOI, as the encoder's
  // output the GPU route splices them into): every byte of both, nothing else.
  if (markers.valid) {
    const std::vector<std::uint8_t> spliced = cuconv::codec::insert_app_segments(bytes, markers.copied_segments);
    if (spliced.size() != size + copied) std::abort();
  }
  return 0;
}
