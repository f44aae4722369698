// SPDX-License-Identifier: Apache-2.0
#pragma once
// libtiff on bytes in memory, through its client callbacks: the encoder writes a growable buffer,
// the decoder reads bytes a caller holds (a TIFF the GPU route read as a .jpg file's bytes).
#include <tiffio.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cuconv::codec {

/// An in-memory file: `written` grows as libtiff writes, or `source` (when not empty) is read, and
/// the position of the next access.
struct MemoryFile {
  std::vector<unsigned char> written;
  std::span<const unsigned char> source;  ///< read-only bytes; writes to them fail
  std::uint64_t position = 0;
  std::string error;  ///< libtiff's last error message, where a handler stores it
};

/// TIFFClientOpenExt on `file` with `mode` ("w", "r") and `options`' handlers; `name` appears in
/// libtiff's messages. nullptr when libtiff cannot open it.
[[nodiscard]] TIFF* open_memory_tiff(const std::string& name, const char* mode, MemoryFile& file,
                                     TIFFOpenOptions* options);

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};
struct OptionsFreer {
  void operator()(TIFFOpenOptions* options) const { TIFFOpenOptionsFree(options); }
};

}  // namespace cuconv::codec
