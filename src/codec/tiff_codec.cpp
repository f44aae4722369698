// SPDX-License-Identifier: Apache-2.0
// TIFF through libtiff. Encoding writes through client callbacks into a growable byte buffer;
// decoding reads the samples of every layout libtiff holds (contiguous or planar, strips or tiles)
// as they are stored, and refuses a file whose strips or tiles give fewer bytes than its rows
// need. libtiff's messages are caught per handle and become the Error's text.
#include "codec/tiff_codec.hpp"

#include "codec/metadata.hpp"  // orient_upright
#include "codec/tiff_memory.hpp"

#include <cuconv/error.hpp>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>  // cvtColor

#include <tiffio.h>

#include <algorithm>
#include <bit>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

namespace cuconv::codec {

namespace {

std::string message_text(const char* module, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  return std::string(module != nullptr ? module : "libtiff") + ": " + text;
}

int on_error(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  static_cast<MemoryFile*>(user_data)->error = message_text(module, format, args);
  return 1;  // handled: libtiff's global handler (stderr) stays quiet
}
int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

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

/// BGR(A) -> RGB(A), or back (the same swap), any depth; a 1-channel image as it is. cvtColor (the
/// faster) takes 8U, 16U and 32F; mixChannels the rest.
cv::Mat to_rgb_order(const cv::Mat& image) {
  if (image.channels() < 3) return image;
  cv::Mat rgb(image.size(), image.type());
  if (image.depth() == CV_8U || image.depth() == CV_16U || image.depth() == CV_32F) {
    cv::cvtColor(image, rgb, image.channels() == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_RGBA2BGRA);
    return rgb;
  }
  const int swap3[] = {0, 2, 1, 1, 2, 0};
  const int swap4[] = {0, 2, 1, 1, 2, 0, 3, 3};
  cv::mixChannels(&image, 1, &rgb, 1, image.channels() == 3 ? swap3 : swap4,
                  static_cast<std::size_t>(image.channels()));
  return rgb;
}

// ---- decoding -----------------------------------------------------------------------------

/// libtiff's messages while one file is decoded. Warnings while pixels are read are fatal (a
/// codec that runs out of data may only warn); in the directory only those about the strip or
/// tile byte counts are, because libtiff then ignores the count the file gives and reads on.
struct ReadMessages {
  std::string error;   ///< the first error
  std::string defect;  ///< the first fatal warning
  bool reading_pixels = false;
};

int on_read_error(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  auto& messages = *static_cast<ReadMessages*>(user_data);
  if (messages.error.empty()) messages.error = message_text(module, format, args);
  return 1;
}

int on_read_warning(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  auto& messages = *static_cast<ReadMessages*>(user_data);
  const std::string text = message_text(module, format, args);
  const bool byte_counts = text.find("ByteCounts") != std::string::npos && text.find("missing") == std::string::npos;
  if ((messages.reading_pixels || byte_counts) && messages.defect.empty()) messages.defect = text;
  return 1;
}

/// The layout of the first image of a TIFF, as its directory gives it.
struct TiffLayout {
  std::uint32_t width = 0, height = 0;
  std::uint16_t samples = 1, bits = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
  std::uint16_t photometric = PHOTOMETRIC_MINISBLACK, compression = COMPRESSION_NONE;
  bool tiled = false;
};

/// The OpenCV depth of `layout`'s samples read as they are; -1 where there is none.
int sample_depth(const TiffLayout& layout) {
  const int bits = layout.bits;
  if (layout.format == SAMPLEFORMAT_UINT) return bits == 8 ? CV_8U : bits == 16 ? CV_16U : -1;
  if (layout.format == SAMPLEFORMAT_INT) return bits == 8 ? CV_8S : bits == 16 ? CV_16S : bits == 32 ? CV_32S : -1;
  return layout.format != SAMPLEFORMAT_IEEEFP ? -1 : bits == 32 ? CV_32F : bits == 64 ? CV_64F : -1;
}

/// "16-bit unsigned integer", "64-bit float" ...: a sample type as a message names it.
std::string sample_name(const TiffLayout& layout) {
  const char* kind = layout.format == SAMPLEFORMAT_INT      ? "signed integer"
                     : layout.format == SAMPLEFORMAT_IEEEFP ? "float"
                     : layout.format == SAMPLEFORMAT_UINT   ? "unsigned integer"
                                                            : "complex or untyped";
  return std::to_string(layout.bits) + "-bit " + kind;
}

/// Reads every strip or tile of `plane` (0 for contiguous samples) into `out`, rows of
/// `row_bytes` packed as the file stores them. A strip or tile that decodes to fewer bytes than
/// its rows need, or an uncompressed one whose byte count is short, is a truncated file.
void read_plane(TIFF* tif, const TiffLayout& layout, std::uint16_t plane, std::size_t row_bytes, unsigned char* out,
                const std::function<Error(const std::string&)>& truncated) {
  const auto check_count = [&](std::uint32_t strile, std::uint64_t needed, const char* what) {
    const std::uint64_t held = TIFFGetStrileByteCount(tif, strile);
    if (layout.compression == COMPRESSION_NONE && held < needed)
      throw truncated(std::string(what) + " " + std::to_string(strile) + " holds " + std::to_string(held) + " bytes, " +
                      std::to_string(needed) + " needed");
  };
  if (!layout.tiled) {
    std::uint32_t rows_per_strip = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
    rows_per_strip = std::clamp<std::uint32_t>(rows_per_strip, 1, layout.height);
    for (std::uint32_t row = 0; row < layout.height; row += rows_per_strip) {
      const std::uint32_t rows = std::min(rows_per_strip, layout.height - row);
      const std::uint32_t strip = TIFFComputeStrip(tif, row, plane);
      const auto needed = static_cast<tmsize_t>(TIFFVStripSize64(tif, rows));
      check_count(strip, static_cast<std::uint64_t>(needed), "strip");
      unsigned char* at = out + static_cast<std::size_t>(row) * row_bytes;
      const tmsize_t got = TIFFReadEncodedStrip(tif, strip, at, needed);
      if (got != needed)
        throw truncated("strip " + std::to_string(strip) + " decodes to " + std::to_string(std::max<tmsize_t>(got, 0)) +
                        " of the " + std::to_string(needed) + " bytes its rows need");
    }
    return;
  }
  std::uint32_t tile_width = 0, tile_height = 0;
  TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tile_width);
  TIFFGetField(tif, TIFFTAG_TILELENGTH, &tile_height);
  const auto tile_bytes = static_cast<tmsize_t>(TIFFTileSize64(tif));
  const auto tile_row_bytes = static_cast<std::size_t>(TIFFTileRowSize64(tif));
  const std::size_t bits_per_pixel =
      static_cast<std::size_t>(layout.bits) * (layout.planar == PLANARCONFIG_CONTIG ? layout.samples : 1);
  // TIFF asks for tile widths in multiples of 16; a 1-bit tile must at least start on a byte.
  if (tile_width == 0 || tile_height == 0 || tile_bytes <= 0 || tile_width * bits_per_pixel % 8 != 0)
    throw truncated("tiles of " + std::to_string(tile_width) + "x" + std::to_string(tile_height) + " pixels");
  std::vector<unsigned char> tile(static_cast<std::size_t>(tile_bytes));
  for (std::uint32_t y = 0; y < layout.height; y += tile_height)
    for (std::uint32_t x = 0; x < layout.width; x += tile_width) {
      const std::uint32_t index = TIFFComputeTile(tif, x, y, 0, plane);
      check_count(index, static_cast<std::uint64_t>(tile_bytes), "tile");
      const tmsize_t got = TIFFReadEncodedTile(tif, index, tile.data(), tile_bytes);
      if (got != tile_bytes)
        throw truncated("tile " + std::to_string(index) + " decodes to " + std::to_string(std::max<tmsize_t>(got, 0)) +
                        " of its " + std::to_string(tile_bytes) + " bytes");
      const std::size_t offset = x * bits_per_pixel / 8;
      const std::size_t count = std::min(tile_row_bytes, row_bytes - offset);
      for (std::uint32_t r = 0; r < tile_height && y + r < layout.height; ++r)
        std::memcpy(out + (y + r) * row_bytes + offset, tile.data() + r * tile_row_bytes, count);
    }
}

/// A bilevel image, one bit per pixel, as 8-bit 0 and 255 (white is 255 whichever value the file
/// gives it).
cv::Mat unpack_bits(const cv::Mat& packed, const TiffLayout& layout) {
  cv::Mat image(static_cast<int>(layout.height), static_cast<int>(layout.width), CV_8UC1);
  const unsigned char one = layout.photometric == PHOTOMETRIC_MINISWHITE ? 0 : 255;
  for (int r = 0; r < image.rows; ++r) {
    const unsigned char* in = packed.ptr<unsigned char>(r);
    auto* row = image.ptr<unsigned char>(r);
    for (int c = 0; c < image.cols; ++c)
      row[c] = (in[c / 8] >> (7 - c % 8)) & 1 ? one : static_cast<unsigned char>(255 - one);
  }
  return image;
}

bool is_gray(const TiffLayout& layout) {
  return layout.photometric == PHOTOMETRIC_MINISBLACK || layout.photometric == PHOTOMETRIC_MINISWHITE;
}

/// Whether the samples are read as they are stored: gray and RGB(A) of 1 (gray) or 8 bits and more.
/// libtiff's RGBA reader (8-bit) converts the rest: palette, CMYK, YCbCr, CIE L*a*b*, 2- and 4-bit.
bool reads_samples_as_stored(const TiffLayout& layout) {
  if (is_gray(layout)) return layout.bits == 1 || layout.bits >= 8;
  return layout.photometric == PHOTOMETRIC_RGB && layout.bits >= 8;
}

/// libtiff's RGBA reader: 8-bit BGR, BGRA where the file has an alpha sample, gray where its
/// photometric interpretation is gray.
cv::Mat read_through_rgba(TIFF* tif, const TiffLayout& layout, const std::function<Error(const std::string&)>& refuse,
                          const std::function<Error(const std::string&)>& truncated) {
  char message[1024] = {};
  if (layout.bits > 8)
    throw refuse(sample_name(layout) + " samples with photometric interpretation " +
                 std::to_string(layout.photometric) + " (read: gray and RGB of 8 bits and more; others up to 8 bits)");
  if (!TIFFRGBAImageOK(tif, message)) throw refuse(message);
  TIFFRGBAImage reader{};
  if (!TIFFRGBAImageBegin(&reader, tif, 1, message)) throw refuse(message);
  std::vector<std::uint32_t> raster(static_cast<std::size_t>(layout.width) * layout.height);
  reader.req_orientation = reader.orientation;  // rows as stored: decode_tiff turns them upright
  const int ok = TIFFRGBAImageGet(&reader, raster.data(), layout.width, layout.height);
  const bool alpha = reader.alpha != 0;
  TIFFRGBAImageEnd(&reader);
  if (!ok) throw truncated("libtiff's RGBA reader stopped before the end of the image");
  // Each value is A, B, G, R from the high byte down: R, G, B, A in memory on this little-endian host.
  static_assert(std::endian::native == std::endian::little);
  const cv::Mat rgba(static_cast<int>(layout.height), static_cast<int>(layout.width), CV_8UC4, raster.data());
  cv::Mat image;
  if (is_gray(layout)) {
    cv::extractChannel(rgba, image, 0);
  } else {
    image.create(rgba.size(), CV_8UC(alpha ? 4 : 3));
    const int from_to[] = {0, 2, 1, 1, 2, 0, 3, 3};
    cv::mixChannels(&rgba, 1, &image, 1, from_to, static_cast<std::size_t>(image.channels()));
  }
  return image;
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
    const std::unique_ptr<TIFF, TiffCloser> tif(open_memory_tiff(path, "w", file, options.get()));
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
  return std::move(file.written);
}

namespace {

/// decode_tiff of the TIFF that `open_tiff` opens with the options it is given (the read handlers);
/// an empty `path` leaves the messages without a file name.
cv::Mat decode_opened(const std::string& path, const std::function<TIFF*(TIFFOpenOptions*)>& open_tiff) {
  const std::string who = path.empty() ? std::string() : path + ": ";  // messages' prefix
  ReadMessages messages;
  const auto with_libtiff = [&](const std::string& text) {
    const std::string& said = !messages.defect.empty() ? messages.defect : messages.error;
    return said.empty() ? text : text + " (" + said + ")";
  };
  const auto truncated = [&](const std::string& what) {
    return Error(ErrorKind::bad_input,
                 who + "cannot decode image: truncated or corrupt TIFF file: " + with_libtiff(what));
  };
  const auto refuse = [&](const std::string& what) {
    return Error(ErrorKind::bad_input, who + "unsupported TIFF layout: " + what);
  };
  const std::unique_ptr<TIFFOpenOptions, OptionsFreer> options(TIFFOpenOptionsAlloc());
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_read_error, &messages);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_read_warning, &messages);
  const std::unique_ptr<TIFF, TiffCloser> tif(open_tiff(options.get()));
  if (!tif) throw truncated("libtiff cannot read its first image directory");
  TIFF* t = tif.get();
  if (!messages.defect.empty()) throw truncated("its strip or tile byte counts do not match the image");
  TiffLayout layout;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &layout.width);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &layout.height);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &layout.samples);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &layout.bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &layout.format);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &layout.planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &layout.compression);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &layout.photometric))
    layout.photometric = layout.samples >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  layout.tiled = TIFFIsTiled(t) != 0;
  if (layout.width == 0 || layout.height == 0) throw truncated("no image size");
  if (!TIFFIsCODECConfigured(layout.compression))
    throw refuse("compression " + std::to_string(layout.compression) + ", which this build of libtiff cannot decode");
  // JPEG-compressed YCbCr: libjpeg converts to RGB, and the samples are then read as RGB ones.
  if (layout.compression == COMPRESSION_JPEG && layout.photometric == PHOTOMETRIC_YCBCR &&
      TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB))
    layout.photometric = PHOTOMETRIC_RGB;
  // Samples past the colour ones are extra samples: one is kept as alpha, more are refused.
  if ((is_gray(layout) && layout.samples != 1) ||
      (layout.photometric == PHOTOMETRIC_RGB && layout.samples != 3 && layout.samples != 4))
    throw Error(ErrorKind::bad_input, who + "unsupported channel count " + std::to_string(layout.samples) +
                                          " (the TIFF's samples per pixel; supported: 1, 3, 4)");
  std::uint16_t orientation = ORIENTATION_TOPLEFT;
  TIFFGetFieldDefaulted(t, TIFFTAG_ORIENTATION, &orientation);
  messages.reading_pixels = true;
  cv::Mat image = reads_samples_as_stored(layout) ? cv::Mat() : read_through_rgba(t, layout, refuse, truncated);
  const int depth = layout.bits == 1 || !image.empty() ? CV_8U : sample_depth(layout);
  if (depth < 0)
    throw Error(ErrorKind::bad_input, who + "unsupported pixel depth: the TIFF's samples are " + sample_name(layout) +
                                          " (supported: 8U, 16U, 32F)");
  const int planes = !image.empty() ? 0 : layout.planar == PLANARCONFIG_SEPARATE ? layout.samples : 1;
  const std::size_t row_bytes = static_cast<std::size_t>(TIFFScanlineSize64(t));
  // Each plane is read straight into a continuous matrix whose rows are the file's (packed bits
  // for 1-bit gray); planar RGB(A) is merged in BGR(A) order, contiguous swapped after.
  const cv::Size size(static_cast<int>(layout.width), static_cast<int>(layout.height));
  const int row_width = layout.bits == 1 ? static_cast<int>(row_bytes) : size.width;
  std::vector<cv::Mat> channels;
  for (int plane = 0; plane < planes; ++plane) {  // none when libtiff's RGBA reader read the image
    channels.emplace_back(size.height, row_width, CV_MAKETYPE(depth, layout.bits == 1 ? 1 : layout.samples / planes));
    if (channels.back().step != row_bytes) throw refuse("rows of " + std::to_string(row_bytes) + " bytes");
    read_plane(t, layout, static_cast<std::uint16_t>(plane), row_bytes, channels.back().data, truncated);
  }
  if (!messages.defect.empty() || !messages.error.empty()) throw truncated("libtiff reported a damaged image");
  if (planes >= 3) std::swap(channels[0], channels[2]);
  if (planes > 1)
    cv::merge(channels, image);
  else if (planes == 1)
    image = layout.bits == 1 ? unpack_bits(channels[0], layout) : channels[0];
  if (layout.photometric == PHOTOMETRIC_MINISWHITE && layout.bits >= 8) {
    if (depth != CV_8U && depth != CV_16U) throw refuse(sample_name(layout) + " samples with white as zero");
    cv::bitwise_not(image, image);  // max - value for unsigned samples
  }
  if (planes == 1) image = to_rgb_order(image);  // RGB(A) -> BGR(A)
  orient_upright(image, orientation);
  return image;
}

}  // namespace

cv::Mat decode_tiff(const std::string& path) {
  // "m": read with read(2), never a mapping, which a file cut while it is read would turn into SIGBUS.
  return decode_opened(path, [&](TIFFOpenOptions* options) { return TIFFOpenExt(path.c_str(), "rm", options); });
}

cv::Mat decode_tiff(const std::string& name, std::span<const unsigned char> bytes) {
  MemoryFile file;
  file.source = bytes;
  return decode_opened(name, [&](TIFFOpenOptions* options) { return open_memory_tiff(name, "rm", file, options); });
}

}  // namespace cuconv::codec
