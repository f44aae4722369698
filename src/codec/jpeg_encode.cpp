// SPDX-License-Identifier: Apache-2.0
// libjpeg compression into a growing byte vector, set up as OpenCV's JPEG encoder sets it up:
// RGB rows in (BGR swapped per row, BGRA's alpha dropped), jpeg_set_defaults, then the quality
// with baseline tables. Errors unwind with longjmp; everything alive across it is set up first.
#include "codec/jpeg_encode.hpp"

#include <cuconv/error.hpp>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <string>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace cuconv::codec {

namespace {

struct ErrorManager {
  jpeg_error_mgr base;  // first: libjpeg hands back a pointer to it
  std::jmp_buf unwind;
};

[[noreturn]] void on_error(j_common_ptr info) { std::longjmp(reinterpret_cast<ErrorManager*>(info->err)->unwind, 1); }

void no_message(j_common_ptr, int) {}

/// libjpeg's output in 64 KiB steps into `bytes`.
struct VectorDestination {
  jpeg_destination_mgr base;  // first, as above
  std::vector<unsigned char>* bytes;
  static constexpr std::size_t kStep = std::size_t{1} << 16;

  /// Makes room for kStep more bytes; no exception crosses libjpeg's C frames: a failed
  /// allocation becomes libjpeg's own out-of-memory error.
  static void make_room(j_compress_ptr info) {
    auto* self = reinterpret_cast<VectorDestination*>(info->dest);
    const std::size_t used = self->bytes->size();
    bool failed = false;
    try {
      self->bytes->resize(used + kStep);
    } catch (...) {
      failed = true;  // longjmp only once the handler has ended
    }
    if (failed) ERREXIT(info, JERR_OUT_OF_MEMORY);
    self->base.next_output_byte = self->bytes->data() + used;
    self->base.free_in_buffer = kStep;
  }
  static void start(j_compress_ptr info) { make_room(info); }
  static boolean grow(j_compress_ptr info) {  // called when the buffer is full
    make_room(info);
    return TRUE;
  }
  static void finish(j_compress_ptr info) {
    auto* self = reinterpret_cast<VectorDestination*>(info->dest);
    self->bytes->resize(self->bytes->size() - self->base.free_in_buffer);
  }
};

}  // namespace

std::optional<std::vector<unsigned char>> encode_jpeg(const cv::Mat& image, int quality, double dpi_x, double dpi_y) {
  const int channels = image.channels();
  if (image.depth() != CV_8U || (channels != 1 && channels != 3 && channels != 4) || image.empty()) return std::nullopt;
  std::vector<unsigned char> bytes;
  std::vector<unsigned char> row(static_cast<std::size_t>(image.cols) * 3);
  jpeg_compress_struct info{};
  ErrorManager errors;
  info.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = on_error;
  errors.base.emit_message = no_message;
  VectorDestination destination{};
  destination.bytes = &bytes;
  destination.base.init_destination = VectorDestination::start;
  destination.base.empty_output_buffer = VectorDestination::grow;
  destination.base.term_destination = VectorDestination::finish;
  if (setjmp(errors.unwind) != 0) {
    char text[JMSG_LENGTH_MAX] = {};
    errors.base.format_message(reinterpret_cast<j_common_ptr>(&info), text);
    jpeg_destroy_compress(&info);
    throw Error(ErrorKind::output, std::string("cannot encode image as JPEG: ") + text);
  }
  jpeg_create_compress(&info);
  info.dest = &destination.base;
  info.image_width = static_cast<JDIMENSION>(image.cols);
  info.image_height = static_cast<JDIMENSION>(image.rows);
  info.input_components = channels > 1 ? 3 : 1;
  info.in_color_space = channels > 1 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, std::clamp(quality, 0, 100), TRUE);  // baseline-limited tables, as OpenCV
  if (dpi_x > 0 && dpi_y > 0) {                                // JFIF holds whole dots per inch up to 65535
    info.density_unit = 1;
    info.X_density = static_cast<UINT16>(std::clamp(std::lround(dpi_x), 1L, 65535L));
    info.Y_density = static_cast<UINT16>(std::clamp(std::lround(dpi_y), 1L, 65535L));
  }
  jpeg_start_compress(&info, TRUE);
  for (int y = 0; y < image.rows; ++y) {
    const unsigned char* pixel = image.ptr(y);
    JSAMPROW out = const_cast<JSAMPROW>(pixel);
    if (channels > 1) {
      for (int x = 0; x < image.cols; ++x, pixel += channels) {
        row[3 * x] = pixel[2];
        row[3 * x + 1] = pixel[1];
        row[3 * x + 2] = pixel[0];
      }
      out = row.data();
    }
    jpeg_write_scanlines(&info, &out, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  return bytes;
}

}  // namespace cuconv::codec
