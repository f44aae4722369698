// SPDX-License-Identifier: Apache-2.0
// TIFF encoding through libtiff into memory. libtiff writes through client callbacks into a
// growable byte buffer; its messages are caught per handle and become the Error's text.
#include "codec/tiff_codec.hpp"

#include <cuconv/error.hpp>

#include <opencv2/core.hpp>

#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

namespace cuconv::codec {

namespace {

/// The in-memory file libtiff reads and writes: bytes, and the position of the next access.
struct MemoryFile {
  std::vector<unsigned char> bytes;
  std::uint64_t position = 0;
  std::string error;  ///< libtiff's last error message
};

MemoryFile& file_of(thandle_t handle) { return *static_cast<MemoryFile*>(handle); }

tmsize_t read_proc(thandle_t handle, void* out, tmsize_t size) {
  MemoryFile& file = file_of(handle);
  const auto available = file.position < file.bytes.size() ? file.bytes.size() - file.position : 0;
  const auto count = std::min<std::uint64_t>(available, static_cast<std::uint64_t>(size));
  std::memcpy(out, file.bytes.data() + file.position, count);
  file.position += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t write_proc(thandle_t handle, void* data, tmsize_t size) {
  MemoryFile& file = file_of(handle);
  const auto end = file.position + static_cast<std::uint64_t>(size);
  if (end > file.bytes.size()) file.bytes.resize(end);
  std::memcpy(file.bytes.data() + file.position, data, static_cast<std::size_t>(size));
  file.position = end;
  return size;
}

toff_t seek_proc(thandle_t handle, toff_t offset, int whence) {
  MemoryFile& file = file_of(handle);
  const std::uint64_t base = whence == SEEK_CUR ? file.position : whence == SEEK_END ? file.bytes.size() : 0;
  file.position = base + offset;
  return file.position;
}

int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t handle) { return file_of(handle).bytes.size(); }
int map_proc(thandle_t, void**, toff_t*) { return 0; }
void unmap_proc(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  static_cast<MemoryFile*>(user_data)->error = std::string(module != nullptr ? module : "libtiff") + ": " + text;
  return 1;  // handled: libtiff's global handler (stderr) stays quiet
}
int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};
struct OptionsFreer {
  void operator()(TIFFOpenOptions* options) const { TIFFOpenOptionsFree(options); }
};

/// TIFF's sample format and size for an OpenCV depth.
struct SampleLayout {
  int format;  ///< SAMPLEFORMAT_*
  int bits;
};
SampleLayout sample_layout(int depth) {
  switch (depth) {
    case CV_8U:
      return {SAMPLEFORMAT_UINT, 8};
    case CV_16U:
      return {SAMPLEFORMAT_UINT, 16};
    case CV_16S:
      return {SAMPLEFORMAT_INT, 16};
    case CV_32F:
      return {SAMPLEFORMAT_IEEEFP, 32};
    default:
      return {0, 0};
  }
}

/// BGR(A) -> RGB(A), any depth (cvtColor has no 16S); a 1-channel image as it is.
cv::Mat to_rgb_order(const cv::Mat& image) {
  if (image.channels() < 3) return image;
  cv::Mat rgb(image.size(), image.type());
  const int swap3[] = {0, 2, 1, 1, 2, 0};
  const int swap4[] = {0, 2, 1, 1, 2, 0, 3, 3};
  cv::mixChannels(&image, 1, &rgb, 1, image.channels() == 3 ? swap3 : swap4,
                  static_cast<std::size_t>(image.channels()));
  return rgb;
}

}  // namespace

bool parse_tiff_compression(std::string_view text, TiffCompression& out) {
  if (text == "none")
    out = TiffCompression::none;
  else if (text == "lzw")
    out = TiffCompression::lzw;
  else if (text == "deflate")
    out = TiffCompression::deflate;
  else
    return false;
  return true;
}

std::vector<unsigned char> encode_tiff(const std::string& path, const cv::Mat& image, TiffCompression compression,
                                       double dpi_x, double dpi_y) {
  const SampleLayout layout = sample_layout(image.depth());
  const int channels = image.channels();
  if (layout.bits == 0 || (channels != 1 && channels != 3 && channels != 4))
    throw Error(ErrorKind::output,
                path + ": TIFF cannot hold this image here (" + std::to_string(channels) + " channel(s))");
  MemoryFile file;
  const std::unique_ptr<TIFFOpenOptions, OptionsFreer> options(TIFFOpenOptionsAlloc());
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_error, &file);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_warning, &file);
  const auto fail = [&](const char* what) {
    return Error(ErrorKind::output, path + ": cannot encode TIFF: " + what +
                                        (file.error.empty() ? std::string() : " (" + file.error + ")"));
  };
  {
    const std::unique_ptr<TIFF, TiffCloser> tif(TIFFClientOpenExt(path.c_str(), "w", &file, read_proc, write_proc,
                                                                  seek_proc, close_proc, size_proc, map_proc,
                                                                  unmap_proc, options.get()));
    if (!tif) throw fail("cannot start the encoder");
    TIFF* t = tif.get();
    const int codec = compression == TiffCompression::deflate ? COMPRESSION_ADOBE_DEFLATE
                      : compression == TiffCompression::lzw   ? COMPRESSION_LZW
                                                              : COMPRESSION_NONE;
    bool ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(image.cols)) &&
              TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(image.rows)) &&
              TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(channels)) &&
              TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(layout.bits)) &&
              TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, static_cast<std::uint16_t>(layout.format)) &&
              TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
              TIFFSetField(t, TIFFTAG_PHOTOMETRIC, channels == 1 ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB) &&
              TIFFSetField(t, TIFFTAG_COMPRESSION, codec);
    if (ok && channels == 4) {
      // Unspecified, as OpenCV's reader expects: it would premultiply 8-bit samples marked as
      // unassociated alpha (TIFFRGBAImage), so the file would not read back as written.
      const std::uint16_t extra[] = {EXTRASAMPLE_UNSPECIFIED};
      ok = TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, extra);
    }
    // The predictor makes neighbouring values compress well; it is undone exactly when decoding.
    if (ok && codec != COMPRESSION_NONE)
      ok = TIFFSetField(t, TIFFTAG_PREDICTOR,
                        layout.format == SAMPLEFORMAT_IEEEFP ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL);
    // zlib's fastest level, as OpenCV's PNG default: most of the size gain for a fraction of the
    // time of level 6 (docs/formats.md).
    if (ok && codec == COMPRESSION_ADOBE_DEFLATE) ok = TIFFSetField(t, TIFFTAG_ZIPQUALITY, 1);
    if (ok) ok = TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(t, 0));
    if (ok && dpi_x > 0 && dpi_y > 0)
      ok = TIFFSetField(t, TIFFTAG_XRESOLUTION, static_cast<float>(dpi_x)) &&
           TIFFSetField(t, TIFFTAG_YRESOLUTION, static_cast<float>(dpi_y)) &&
           TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, RESUNIT_INCH);
    if (!ok) throw fail("cannot set the TIFF fields");
    const cv::Mat rgb = to_rgb_order(image);
    // The predictor works in place on the row it is given: hand it a copy, never the caller's pixels.
    std::vector<unsigned char> row_copy(static_cast<std::size_t>(rgb.cols) * rgb.elemSize());
    for (int row = 0; row < rgb.rows; ++row) {
      std::memcpy(row_copy.data(), rgb.ptr(row), row_copy.size());
      if (TIFFWriteScanline(t, row_copy.data(), static_cast<std::uint32_t>(row), 0) < 0)
        throw fail("cannot write a row");
    }
    if (!TIFFWriteDirectory(t)) throw fail("cannot finish the file");
  }
  if (!file.error.empty()) throw fail("libtiff reported an error");
  return std::move(file.bytes);
}

}  // namespace cuconv::codec
