// SPDX-License-Identifier: Apache-2.0
// Image files in and out. Reading keeps the file's depth and channels; encoding refuses formats
// that would silently convert the data. The atomic write of the result is in atomic_write.cpp.
#include <cuconv/convolve.hpp>  // depth_name
#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include "codec/image_header.hpp"
#include "codec/jpeg_decode.hpp"
#include "codec/jpeg_encode.hpp"
#include "codec/metadata.hpp"
#include "codec/opencv_codecs.hpp"
#include "codec/output_formats.hpp"
#include "codec/tiff_codec.hpp"

#include <webp/encode.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>  // the IMREAD_/IMWRITE_ constants only (opencv_codecs.hpp)

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

namespace cuconv {

namespace fs = std::filesystem;

namespace {

using codec::CompressionKind;
using codec::Encoder;
using codec::FormatCapability;
using codec::kFormats;
using codec::kNoMetadata;
using codec::MetadataKept;

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

const FormatCapability* find_format(const std::string& ext) {
  for (const auto& f : kFormats) {
    std::string_view list = f.extensions;
    while (!list.empty()) {
      const auto space = list.find(' ');
      if (list.substr(0, space) == ext) return &f;
      list = space == std::string_view::npos ? std::string_view{} : list.substr(space + 1);
    }
  }
  return nullptr;
}

std::string errno_text() { return std::strerror(errno); }

/// "1 channel (gray)", "3 channels (colour)", "4 channels (colour and alpha)".
std::string channels_text(int channels) {
  switch (channels) {
    case 1:
      return "1 channel (gray)";
    case 3:
      return "3 channels (colour)";
    case 4:
      return "4 channels (colour and alpha)";
    default:
      return std::to_string(channels) + " channels";
  }
}

/// Whether `e` is OpenCV's out-of-memory error (a cv::Mat it could not allocate).
bool is_out_of_memory(const cv::Exception& e) { return e.code == cv::Error::StsNoMem; }

/// The Error for a decoder or encoder that ran out of host memory on `path`.
Error out_of_memory(const std::string& path, std::string_view doing, ErrorKind kind) {
  return Error(kind, path + ": not enough memory to " + std::string(doing) +
                         " (free memory, raise the address-space limit, ulimit -v, or lower `max_pixels`)");
}

/// Lossless WebP of a BGRA image with libwebp itself, `exact` on: the colour of fully transparent
/// pixels is kept. OpenCV's encoder calls libwebp's simple lossless API, which leaves `exact` off
/// and so rewrites those colours (to compress better), and it offers no option to change that.
std::vector<unsigned char> encode_webp_lossless_exact(const std::string& path, const cv::Mat& bgra) {
  WebPConfig config;
  WebPPicture picture;
  if (!WebPConfigInit(&config) || !WebPPictureInit(&picture))
    throw Error(ErrorKind::output, path + ": cannot encode image: libwebp version mismatch");
  config.lossless = 1;
  config.exact = 1;
  config.quality = 70;  // the effort libwebp's simple lossless API (OpenCV's) uses
  picture.use_argb = 1;
  picture.width = bgra.cols;
  picture.height = bgra.rows;
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  picture.writer = WebPMemoryWrite;
  picture.custom_ptr = &writer;
  const bool ok = WebPPictureImportBGRA(&picture, bgra.ptr(), static_cast<int>(bgra.step)) != 0 &&
                  WebPEncode(&config, &picture) != 0;
  const int error = picture.error_code;
  WebPPictureFree(&picture);
  std::vector<unsigned char> encoded(writer.mem, writer.mem + (ok ? writer.size : 0));
  WebPMemoryWriterClear(&writer);
  if (!ok) throw Error(ErrorKind::output, path + ": cannot encode image: libwebp error " + std::to_string(error));
  return encoded;
}

/// The encoder's output for `path`'s format with `options`' quality and compression (checked
/// by check_encoder_options before).
std::vector<unsigned char> encode(const std::string& path, const cv::Mat& image, const WriteOptions& options) {
  const std::string ext = lower_extension(path);
  const FormatCapability* format = find_format(ext);
  const std::pair<double, double> dpi =
      options.metadata != nullptr ? std::pair{options.metadata->dpi_x, options.metadata->dpi_y} : std::pair{0.0, 0.0};
  if (format != nullptr && format->encoder == Encoder::libtiff) {
    codec::TiffCompression codec = codec::TiffCompression::deflate;
    if (!options.compression.empty()) codec::parse_tiff_compression(options.compression, codec);
    return codec::encode_tiff(path, image, codec, dpi.first, dpi.second);
  }
  if (ext == ".webp" && !options.quality && image.channels() == 4) return encode_webp_lossless_exact(path, image);
  std::vector<int> params;
  if (format != nullptr && format->encoder == Encoder::libjpeg) {
    params = {cv::IMWRITE_JPEG_QUALITY, options.quality.value_or(kDefaultJpegQuality)};
    try {
      if (auto encoded = codec::encode_jpeg(image, params[1], dpi.first, dpi.second)) return std::move(*encoded);
    } catch (const Error& e) {
      throw Error(ErrorKind::output, path + ": " + e.what());
    }
  }
  if (ext == ".webp" && options.quality) params = {cv::IMWRITE_WEBP_QUALITY, *options.quality};  // unset: lossless
  if (format != nullptr && format->compression == CompressionKind::zlib_level && !options.compression.empty()) {
    // OpenCV's own default pairs level 1 with the RLE strategy; a chosen level gets zlib's default
    // strategy, so that 9 really compresses harder.
    params = {cv::IMWRITE_PNG_COMPRESSION, std::stoi(options.compression), cv::IMWRITE_PNG_STRATEGY,
              cv::IMWRITE_PNG_STRATEGY_DEFAULT};
  }
  std::vector<unsigned char> encoded;
  bool ok = false;
  try {
    ok = codec::opencv_imencode(ext, image, encoded, params);
  } catch (const cv::Exception& e) {
    if (is_out_of_memory(e)) throw out_of_memory(path, "encode the image", ErrorKind::output);
    throw Error(ErrorKind::output, path + ": cannot encode image: " + e.what());
  }
  if (!ok) throw Error(ErrorKind::output, path + ": cannot encode image");
  return encoded;
}

}  // namespace

void check_encoder_options(const std::string& path, const WriteOptions& options) {
  const std::string ext = lower_extension(path);
  const FormatCapability* format = find_format(ext);
  if (format == nullptr) return;  // check_output_extension names the problem
  if (options.quality) {
    if (!format->quality)
      throw Error(ErrorKind::usage, path + ": `quality` applies to JPEG and WebP outputs, not " + ext);
    if (*options.quality < 1 || *options.quality > 100)
      throw Error(ErrorKind::usage, "`quality` " + std::to_string(*options.quality) + ": expected 1 to 100");
  }
  if (options.compression.empty()) return;
  const std::string& value = options.compression;
  codec::TiffCompression codec{};
  switch (format->compression) {
    case CompressionKind::none:
      throw Error(ErrorKind::usage, path +
                                        ": `compression` applies to PNG (0-9) and TIFF (none, lzw, deflate) "
                                        "outputs, not " +
                                        ext);
    case CompressionKind::zlib_level:
      if (value.size() != 1 || value[0] < '0' || value[0] > '9')
        throw Error(ErrorKind::usage, path + ": `compression` '" + value + "' for PNG: expected a level from 0 to 9");
      break;
    case CompressionKind::tiff_codec:
      if (!codec::parse_tiff_compression(value, codec))
        throw Error(ErrorKind::usage, path + ": `compression` '" + value + "' for TIFF: expected none, lzw or deflate");
      break;
  }
}

WriteOptions encoder_options_for(const std::string& path, WriteOptions options) {
  const FormatCapability* format = find_format(lower_extension(path));
  if (format == nullptr) return options;  // check_output_extension names the problem
  if (!format->quality) options.quality.reset();
  if (!options.compression.empty()) {
    const std::string& value = options.compression;
    codec::TiffCompression codec{};
    const bool fits =
        format->compression == CompressionKind::zlib_level
            ? value.size() == 1 && value[0] >= '0' && value[0] <= '9'
            : format->compression == CompressionKind::tiff_codec && codec::parse_tiff_compression(value, codec);
    if (!fits) options.compression.clear();
  }
  return options;
}

MetadataFate metadata_kept_by(const std::string& path, const ImageMetadata& metadata) {
  const FormatCapability* format = find_format(lower_extension(path));
  const MetadataKept keeps = format != nullptr ? format->metadata : kNoMetadata;
  MetadataFate fate;
  for (const auto& [has, held, name] :
       std::array<std::tuple<bool, bool, const char*>, 4>{{{!metadata.exif.empty(), keeps.exif, "EXIF"},
                                                           {!metadata.icc.empty(), keeps.icc, "ICC profile"},
                                                           {!metadata.xmp.empty(), keeps.xmp, "XMP"},
                                                           {metadata.dpi_x > 0, keeps.dpi, "resolution"}}})
    if (has) {
      std::string& list = held ? fate.kept : fate.dropped;
      list += (list.empty() ? "" : ", ") + std::string(name);
    }
  return fate;
}

void check_image_header(const std::string& path, const ReadLimits& limits) {
  if (const auto header = codec::inspect_image_file(path)) codec::check_header(path, *header, limits);
}

codec::JpegFile codec::read_walked_jpeg_file(const std::string& path, std::uint64_t max_pixels) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    // read_image's own messages for missing files, folders and the like.
    static_cast<void>(read_image(path, {max_pixels}));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    static_cast<void>(read_image(path, {max_pixels}));  // its message says why (permissions ...)
    throw Error(ErrorKind::bad_input, path + ": cannot open the file");
  }
  JpegFile file;
  file.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorKind::bad_input, path + ": cannot read the file");
  if (file.bytes.empty()) throw Error(ErrorKind::bad_input, path + ": empty file");
  // The header check read_image makes, on the bytes in memory; another format named .jpg is
  // checked as read_image checks it (the GPU codec then hands it to OpenCV).
  if (file.bytes.size() >= 3 && file.bytes[0] == 0xFF && file.bytes[1] == 0xD8 && file.bytes[2] == 0xFF)
    codec::check_header(path, codec::inspect_jpeg(file.bytes, &file.markers), {max_pixels});
  else {
    check_image_header(path, {max_pixels});
    file.markers = read_jpeg_markers(file.bytes);  // says why it is no JPEG stream
  }
  return file;
}

cv::Mat read_image(const std::string& path, const ReadLimits& limits) {
  std::string decoder;
  return read_image(path, limits, decoder);
}

void codec::check_input_file(const std::string& path, int stat_error, InputKind kind) {
  // ENOENT and ENOTDIR mean "not there"; anything else (a symbolic link loop,
  // a name too long, a folder in the path that cannot be searched) is said as it is.
  if (stat_error != 0 && stat_error != ENOENT && stat_error != ENOTDIR)
    throw Error(ErrorKind::bad_input, path + ": cannot open: " + std::generic_category().message(stat_error) +
                                          (stat_error == ELOOP ? " (a symbolic link loop)" : ""));
  if (stat_error != 0 || kind == InputKind::none) throw Error(ErrorKind::bad_input, path + ": no such file");
  if (kind == InputKind::directory)
    throw Error(ErrorKind::bad_input, path +
                                          ": is a directory, not an image file (to filter every image of a "
                                          "folder, give an `out_dir` and the folder as an input)");
  if (kind != InputKind::regular) throw Error(ErrorKind::bad_input, path + ": not a regular file");
}

cv::Mat read_image(const std::string& path, const ReadLimits& limits, std::string& decoder) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  using codec::InputKind;
  codec::check_input_file(path, ec ? ec.value() : 0,
                          !fs::exists(status)           ? InputKind::none
                          : fs::is_directory(status)    ? InputKind::directory
                          : fs::is_regular_file(status) ? InputKind::regular
                                                        : InputKind::other);
  if (::access(path.c_str(), R_OK) != 0) throw Error(ErrorKind::bad_input, path + ": cannot read: " + errno_text());
  if (fs::file_size(path, ec) == 0) throw Error(ErrorKind::bad_input, path + ": empty file");
  const auto header = codec::inspect_image_file(path);
  if (header) codec::check_header(path, *header, limits);
  cv::Mat image;
  try {
    // TIFF: every layout libtiff holds, whole or refused (OpenCV 4.6 leaves planes of a planar
    // 16-bit file zero); JPEG: libjpeg, whose warnings say when data runs out (jpeg_decode.hpp).
    if (header && header->format == "TIFF") image = codec::decode_tiff(path);
    if (header && header->format == "JPEG") image = codec::decode_jpeg(path).value_or(cv::Mat());
    decoder = image.empty() ? "opencv" : header->format == "TIFF" ? "libtiff" : "libjpeg";
    if (image.empty()) image = codec::opencv_imread(path, cv::IMREAD_UNCHANGED);
  } catch (const std::bad_alloc&) {
    throw out_of_memory(path, "decode the image", ErrorKind::bad_input);
  } catch (const cv::Exception& e) {
    if (is_out_of_memory(e)) throw out_of_memory(path, "decode the image", ErrorKind::bad_input);
    // OpenCV reads its own limits from the environment when the library loads, so only the
    // environment can raise them.
    if (std::string_view(e.what()).find("CV_IO_MAX_IMAGE") != std::string_view::npos) {
      throw Error(ErrorKind::bad_input, path +
                                            ": larger than OpenCV's decoder limits (by default 2^30 pixels and "
                                            "2^20 per side); raise them with the environment variables "
                                            "OPENCV_IO_MAX_IMAGE_PIXELS, OPENCV_IO_MAX_IMAGE_WIDTH and "
                                            "OPENCV_IO_MAX_IMAGE_HEIGHT");
    }
    throw Error(ErrorKind::bad_input, path + ": cannot decode image: " + e.what());
  }
  if (image.empty())
    throw Error(ErrorKind::bad_input,
                path + ": cannot decode image (corrupt, truncated or not an image format OpenCV reads)");
  if (header) codec::check_decoded_size(path, *header, image.rows, image.cols, image.channels());
  // Formats whose header is not read above meet the limit here, after decoding.
  codec::check_pixel_count(path, "image has", static_cast<std::uint64_t>(image.cols),
                           static_cast<std::uint64_t>(image.rows), limits);
  const int depth = image.depth();
  if (depth != CV_8U && depth != CV_16U && depth != CV_32F)
    throw Error(ErrorKind::bad_input,
                path + ": unsupported pixel depth " + depth_name(depth) + " (supported: 8U, 16U, 32F)" +
                    (depth == CV_16S ? "; 16S is an output depth only: to filter a result again, "
                                       "write it as 32F (`depth` 32f), which holds every 16S value"
                                     : ""));
  const int cn = image.channels();
  if (cn != 1 && cn != 3 && cn != 4)
    throw Error(ErrorKind::bad_input,
                path + ": unsupported channel count " + std::to_string(cn) + " (supported: 1, 3, 4)");
  return image;
}

void check_output_extension(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext.empty())
    throw Error(ErrorKind::output, path + ": has no extension to pick the output format (add .png, .tif, .jpg ...)");
  const FormatCapability* format = find_format(ext);
  if (format == nullptr || (format->encoder == Encoder::opencv && !codec::opencv_have_writer(path))) {
    throw Error(ErrorKind::output, path + ": cannot write '" + ext +
                                       "' files (use .png, .tif, .jpg, .bmp, .webp, .pgm/.ppm, .exr or .pfm)");
  }
}

bool has_image_extension(const std::string& path) { return find_format(lower_extension(path)) != nullptr; }

void check_output_format(const std::string& path, int depth, int channels) {
  check_output_extension(path);
  const std::string ext = lower_extension(path);
  const FormatCapability* format = find_format(ext);
  if (std::find(format->depths.begin(), format->depths.end(), depth) == format->depths.end()) {
    throw Error(ErrorKind::output, path + ": " + ext + " cannot hold " + depth_name(depth) +
                                       " pixels without converting them; use .tif" +
                                       (depth == CV_32F ? " (or .exr/.pfm)" : "") + " or choose `depth`");
  }
  if (std::find(format->channels.begin(), format->channels.end(), channels) == format->channels.end()) {
    if (!format->instead.empty())
      throw Error(ErrorKind::output, path + ": " + ext + " cannot hold " + channels_text(channels) + " (" +
                                         std::string(format->instead) + ")");
    throw Error(ErrorKind::output, path + ": " + ext + " cannot store an alpha channel; use .png or .tif");
  }
}

bool is_two_level(const cv::Mat& image) {
  if (image.depth() != CV_8U || image.channels() != 1) return false;
  cv::Mat other;
  cv::bitwise_and(image != 0, image != 255, other);
  return cv::countNonZero(other) == 0;
}

void check_two_level(const std::string& path, const cv::Mat& image) {
  const FormatCapability* format = find_format(lower_extension(path));
  if (format == nullptr || !format->two_level || is_two_level(image)) return;
  throw Error(ErrorKind::output, path +
                                     ": .pbm stores black and white only (one bit per pixel), but the image has "
                                     "values other than 0 and 255, which it would turn white; use .pgm or .png");
}

void check_not_same_file(const std::string& input, const std::string& output) {
  std::error_code ec;
  if (fs::exists(output, ec) && fs::equivalent(input, output, ec) && !ec)
    throw Error(ErrorKind::usage, output + ": output is the input file; refusing to overwrite it");
}

std::string encoder_of(const std::string& path, const cv::Mat& image, const WriteOptions& options) {
  const std::string ext = lower_extension(path);
  const FormatCapability* format = find_format(ext);
  if (format != nullptr && format->encoder == Encoder::libtiff) return "libtiff";
  if (ext == ".webp" && !options.quality && image.channels() == 4) return "libwebp";
  // encode_jpeg's own condition; check_output_format leaves JPEG outputs no other image.
  if (format != nullptr && format->encoder == Encoder::libjpeg && image.depth() == CV_8U && !image.empty())
    return "libjpeg";
  return "opencv";
}

std::vector<unsigned char> encode_image(const std::string& path, const cv::Mat& image, const WriteOptions& options) {
  check_output_format(path, image.depth(), image.channels());
  check_two_level(path, image);
  check_encoder_options(path, options);
  std::vector<unsigned char> encoded;
  try {
    encoded = encode(path, image, options);
  } catch (const std::bad_alloc&) {
    throw out_of_memory(path, "encode the image", ErrorKind::output);
  }
  if (options.metadata != nullptr) {
    const MetadataKept keeps = find_format(lower_extension(path))->metadata;
    ImageMetadata kept;
    if (keeps.exif) kept.exif = options.metadata->exif;
    if (keeps.icc) kept.icc = options.metadata->icc;
    if (keeps.xmp) kept.xmp = options.metadata->xmp;
    if (!kept.exif.empty() || !kept.icc.empty() || !kept.xmp.empty())
      encoded = codec::embed_metadata(path, std::move(encoded), kept);
    // TIFF and JPEG have their density written by the encoder; PNG's pHYs is added here.
    if (lower_extension(path) == ".png")
      encoded = codec::with_png_density(std::move(encoded), options.metadata->dpi_x, options.metadata->dpi_y);
  }
  return encoded;
}

}  // namespace cuconv
