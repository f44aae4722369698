// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file image_io.hpp
/// Reading and writing images with OpenCV, with the checks that keep data from being lost.
#include <opencv2/core/mat.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv {

/// Default largest image, in pixels: 2^30 = 32768 x 32768, also OpenCV's own decoder default
/// (OPENCV_IO_MAX_IMAGE_PIXELS). Up to 16 GiB decoded (4 channels of 32F), while a header
/// claiming 100000 x 100000 (10^10 pixels) is refused before anything is allocated.
inline constexpr std::uint64_t kDefaultMaxPixels = std::uint64_t{1} << 30;

/// What read_image accepts.
struct ReadLimits {
  std::uint64_t max_pixels = kDefaultMaxPixels;  ///< width x height (--max-pixels)
};

/// Reads an image unchanged (bit depth, alpha kept). Throws Error{bad_input} naming the file
/// when it is missing, a directory, undecodable, truncated, larger than `limits` (checked on the
/// header of PNG, JPEG, TIFF and BMP files before decoding), or of an unsupported depth/channel
/// count.
[[nodiscard]] cv::Mat read_image(const std::string& path, const ReadLimits& limits = {});
/// The same, setting `decoder` to the library that decoded it: "libjpeg" (JPEG files it takes)
/// or "opencv" (every other file), for -v and --json.
[[nodiscard]] cv::Mat read_image(const std::string& path, const ReadLimits& limits, std::string& decoder);

/// The checks read_image makes on a file's header before decoding it (PNG, JPEG, TIFF, BMP):
/// Error{bad_input} naming the file when its structure is truncated or corrupt or it has more
/// pixels than `limits` allow. Used by the GPU JPEG path, which decodes the bytes itself.
void check_image_header(const std::string& path, const ReadLimits& limits = {});

/// Throws Error{output} when `path`'s format cannot hold an image of this depth and channel count
/// (a float result to PNG, alpha to JPEG, colour to .pgm, gray to .ppm, anything but one 8-bit
/// channel to .pbm ...) or no encoder handles its extension. Looks at the name only, never at the
/// file system: what is at the path and whether its folder exists are the caller's to ask (the
/// engine asks the command's engine::Files, so a served command asks its client). Runs before any work.
void check_output_format(const std::string& path, int depth, int channels);

/// Whether `image` is one 8-bit channel of 0s and 255s only: what a PBM file (one bit per pixel)
/// holds and gives back unchanged.
[[nodiscard]] bool is_two_level(const cv::Mat& image);

/// Throws Error{output} when `path` is a .pbm and `image` is not two-level (is_two_level): PBM
/// would write every value but 0 as white. The pixels decide, so this runs on the result, after
/// check_output_format has passed (8U, one channel) and before encoding; encode_image and
/// write_image_atomic call it themselves, so no .pbm is ever written with values changed.
void check_two_level(const std::string& path, const cv::Mat& image);

/// Throws Error{usage} when `output` names the same file as `input` (also through links).
void check_not_same_file(const std::string& input, const std::string& output);

/// Throws Error{output} when no encoder handles `path`'s extension; the depth and channel checks
/// of check_output_format need the decoded image, this one can run before any is read.
void check_output_extension(const std::string& path);

/// Whether `path` ends in an extension of an image format cuconv reads and writes (.png, .tif,
/// .jpg ..., case-insensitive): how batch mode picks the images of a directory.
[[nodiscard]] bool has_image_extension(const std::string& path);

/// Name prefix of write_image_atomic's temporary files. Such a file is never a finished image:
/// a process killed while writing (SIGKILL) can leave one behind, later runs ignore them.
inline constexpr std::string_view kTempFilePrefix = ".cuconv-tmp-";

/// Whether the file name of `path` (its last component) starts with kTempFilePrefix: a file
/// batch mode never takes as an input, and a name no output may have (later runs would skip it
/// and the documented clean-up would delete it).
[[nodiscard]] bool is_temp_file_name(const std::string& path);

/// The mkstemp template (ending in XXXXXX) of write_image_atomic's temporary file for an output
/// file named `output_name`: kTempFilePrefix + the name + ".XXXXXX", the name cut short (at a
/// character boundary) where the whole would pass NAME_MAX (255 bytes), so every output name a
/// file system takes gets a temporary name it takes too. Both modes refuse output names that
/// start with kTempFilePrefix (is_temp_file_name), so a temporary name never equals an output's.
[[nodiscard]] std::string temp_file_name(const std::string& output_name);

/// JPEG quality when none is asked for.
inline constexpr int kDefaultJpegQuality = 95;

/// Metadata carried from an input to its output: each blob as the formats store it, empty when
/// absent. Read with read_metadata, written by write_image_atomic where the format can hold it.
struct ImageMetadata {
  std::vector<unsigned char> exif;  ///< EXIF as a TIFF-structured block (what JPEG's APP1 holds after "Exif\0\0")
  std::vector<unsigned char> icc;   ///< ICC colour profile
  std::string xmp;                  ///< XMP packet (XML)
  /// Pixel density in dots per inch (TIFF X/YResolution, PNG pHYs, JPEG JFIF density); 0: none.
  double dpi_x = 0, dpi_y = 0;
  /// read_metadata: blocks of the input that were dropped and why, one line each ("ICC profile
  /// dropped: ..."), for the caller to show as warnings; the other blocks are kept.
  std::vector<std::string> warnings;
  [[nodiscard]] bool empty() const { return exif.empty() && icc.empty() && xmp.empty() && dpi_x <= 0; }
};

/// How write_image_atomic encodes and publishes an image.
struct WriteOptions {
  bool overwrite = true;  ///< replace an existing file at the path
  /// JPEG and WebP quality, 1-100; unset: JPEG kDefaultJpegQuality, WebP lossless.
  std::optional<int> quality;
  /// PNG: zlib level "0".."9"; TIFF: "none", "lzw" or "deflate"; empty: the format's default
  /// (PNG: OpenCV's fast setting, level 1; TIFF: deflate). check_encoder_options says what fits.
  std::string compression;
  const ImageMetadata* metadata = nullptr;  ///< kept in the output where its format can hold it
};

/// Throws Error{usage} when `options` do not apply to `path`'s format (--quality on a PNG,
/// --compression lzw on a PNG, a level on a TIFF ...) or are out of range. Runs before any work.
void check_encoder_options(const std::string& path, const WriteOptions& options);

/// `options` as they apply to `path`'s format: the quality only for formats that take one (JPEG,
/// WebP), the compression only where its value fits (a level for PNG, a codec for TIFF); what does
/// not apply is left out. For a batch whose outputs have several formats: `--quality 90` is for
/// its JPEG files and does not refuse its PNG files.
[[nodiscard]] WriteOptions encoder_options_for(const std::string& path, WriteOptions options);

/// Reads the EXIF, ICC and XMP of the image file at `path` (libexiv2). Formats or files exiv2
/// cannot parse give empty metadata: the pixels are what matters, read_image judges the file.
/// Each block is judged on its own: a damaged one (an ICC profile whose header is not an ICC
/// profile's, one exiv2 refuses) is dropped with a line in `warnings`, and the others are kept.
/// A TIFF's Orientation comes back as 1: OpenCV's TIFF decoder, unlike its JPEG, PNG and WebP
/// decoders, rotates the pixels itself, so read_image's pixels are upright already.
[[nodiscard]] ImageMetadata read_metadata(const std::string& path);

/// EXIF Orientation (1-8) of `metadata`; 1 (upright) when absent or invalid.
[[nodiscard]] int exif_orientation(const ImageMetadata& metadata);

/// Rotates/flips `image` so that an image stored with EXIF `orientation` (1-8) is upright, and
/// sets the Orientation of `metadata` (when it has EXIF) to 1: --auto-orient.
void auto_orient(cv::Mat& image, ImageMetadata& metadata);

/// What of an input's metadata an output keeps, and what its format cannot hold: each a list of
/// "EXIF", "ICC profile", "XMP" and "resolution" ("" for none).
struct MetadataFate {
  std::string kept, dropped;
};

/// Which blocks of `metadata` an output file at `path` keeps and which its format drops.
[[nodiscard]] MetadataFate metadata_kept_by(const std::string& path, const ImageMetadata& metadata);

/// The bytes of the file write_image_atomic writes for `path` (its extension picks the format and
/// encoder, `options` the quality, compression and metadata): for standard output.
[[nodiscard]] std::vector<unsigned char> encode_image(const std::string& path, const cv::Mat& image,
                                                      const WriteOptions& options);

/// Encodes and writes atomically: a temporary file in the target directory (named by
/// temp_file_name with a random suffix, permissions 0666 less the umask), fsync, rename.
/// With `options.overwrite` false, an existing file at `path`, also one that appears while the
/// image is encoded, is never replaced (Error{output}); the final step is an atomic no-replace
/// rename. After any failure no file is left at `path` (an existing file is left unchanged).
/// Lossless formats (PNG, TIFF, PNM, BMP, EXR, PFM) decode to exactly the values of `image`.
void write_image_atomic(const std::string& path, const cv::Mat& image, const WriteOptions& options);
inline void write_image_atomic(const std::string& path, const cv::Mat& image, bool overwrite = true) {
  WriteOptions options;
  options.overwrite = overwrite;
  write_image_atomic(path, image, options);
}

/// The library encode_image writes `image` to `path` with (its extension picks the format):
/// "libjpeg", "libtiff", "libwebp" (lossless WebP with alpha) or "opencv", for -v and --json.
[[nodiscard]] std::string encoder_of(const std::string& path, const cv::Mat& image, const WriteOptions& options);

/// write_image_atomic for an image already encoded (the GPU JPEG codec's output): the same
/// temporary file, fsync, rename and no-replace rules.
void write_encoded_atomic(const std::string& path, std::span<const unsigned char> encoded, bool overwrite = true);

}  // namespace cuconv
