// SPDX-License-Identifier: Apache-2.0
// libjpeg with an error manager of cuconv's own: errors unwind with longjmp (libjpeg is C), and
// the warnings that mean the data ran out are recorded and refuse the image.
#include "codec/jpeg_decode.hpp"

#include <cuconv/error.hpp>

#include <opencv2/core.hpp>

#include <csetjmp>
#include <cstdio>
#include <memory>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace cuconv::codec {

namespace {

struct ErrorManager {
  jpeg_error_mgr base;  // first: libjpeg hands back a pointer to it
  std::jmp_buf unwind;
  bool data_ran_out = false;
};

[[noreturn]] void on_error(j_common_ptr info) { std::longjmp(reinterpret_cast<ErrorManager*>(info->err)->unwind, 1); }

/// Level -1 is a warning; the rest are trace messages. Nothing is printed.
void on_message(j_common_ptr info, int level) {
  auto* errors = reinterpret_cast<ErrorManager*>(info->err);
  const int code = info->err->msg_code;
  if (level < 0 && (code == JWRN_HIT_MARKER || code == JWRN_JPEG_EOF)) errors->data_ran_out = true;
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

std::optional<cv::Mat> decode_jpeg(const std::string& path) {
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return std::nullopt;
  jpeg_decompress_struct info{};
  ErrorManager errors;
  info.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = on_error;
  errors.base.emit_message = on_message;
  // Everything from here to the end lives in `info` or is plain data: nothing needs a destructor
  // when libjpeg longjmps back.
  cv::Mat image;
  if (setjmp(errors.unwind) != 0) {
    jpeg_destroy_decompress(&info);
    return std::nullopt;  // OpenCV gets the file and says what it makes of it
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file.get());
  jpeg_read_header(&info, TRUE);
  int channels = 0;
  if (info.jpeg_color_space == JCS_GRAYSCALE) {
    info.out_color_space = JCS_GRAYSCALE;
    channels = 1;
  } else if (info.jpeg_color_space == JCS_YCbCr || info.jpeg_color_space == JCS_RGB) {
    info.out_color_space = JCS_EXT_BGR;
    channels = 3;
  } else {
    jpeg_destroy_decompress(&info);
    return std::nullopt;
  }
  jpeg_start_decompress(&info);
  image.create(static_cast<int>(info.output_height), static_cast<int>(info.output_width), CV_8UC(channels));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image.ptr(static_cast<int>(info.output_scanline));
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  if (errors.data_ran_out)
    throw Error(ErrorKind::bad_input, path +
                                          ": cannot decode image: truncated or corrupt JPEG file: its compressed "
                                          "data ends before the image does (premature end of data segment)");
  return image;
}

}  // namespace cuconv::codec
