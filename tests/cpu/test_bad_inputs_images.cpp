// SPDX-License-Identifier: Apache-2.0
// The bad-input matrix, inputs: files that are not (whole) images and images over the pixel limit
// exit 3 before any output, and look-alikes that must still be read. Each row runs the real binary
// and checks the exit code, that the message names the file and says why, and that nothing was
// written.
#include "bad_inputs_support.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <map>
#include <string>
#include <vector>

using cuconv::ExitCode;
using namespace cuconv::test;
using namespace cuconv::test::bad_input;

TEST_CASE("bad input matrix: files that are not (whole) images exit 3") {
  expect_all_refused({
      {.what = "missing input", .input = "@missing.png", .reason = "no such file"},
      {.what = "dangling symlink as input", .input = "@dangling.png", .reason = "no such file"},
      {.what = "directory as input", .input = "@images.d", .reason = "is a directory"},
      {.what = "FIFO as input", .input = "@fifo.png", .reason = "not a regular file"},
      {.what = "character device as input", .input = "/dev/null", .reason = "not a regular file"},
      {.what = "empty file", .input = "@empty.png", .reason = "empty file"},
      {.what = "text file", .input = "@notes.txt", .reason = "cannot decode"},
      {.what = "shell script named .png", .input = "@text.png", .reason = "cannot decode"},
      {.what = "ELF binary named .png", .input = "@elf-binary.png", .reason = "cannot decode"},
      {.what = "random bytes", .input = "@random.png", .reason = "cannot decode"},
      {.what = "PNG: signature only", .input = "@png-signature-only.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: cut inside IHDR", .input = "@png-cut-in-ihdr.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: IHDR and nothing else", .input = "@png-ihdr-only.png", .reason = "before the IEND chunk"},
      {.what = "PNG: cut at 25%", .input = "@png-cut-25.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: cut at 50%", .input = "@png-cut-50.png", .reason = "chunk IDAT"},
      {.what = "PNG: cut at 99%", .input = "@png-cut-99.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: IEND missing", .input = "@png-no-iend.png", .reason = "before the IEND chunk"},
      {.what = "PNG: damaged compressed data (CRC fails)",
       .input = "@png-bad-idat-data.png",
       .reason = "cannot decode"},
      {.what = "PNG: damaged IDAT CRC", .input = "@png-bad-idat-crc.png", .reason = "cannot decode"},
      {.what = "PNG: damaged IHDR CRC", .input = "@png-bad-ihdr-crc.png", .reason = "cannot decode"},
      {.what = "PNG: impossible chunk length", .input = "@png-bad-chunk-length.png", .reason = "no valid chunk"},
      {.what = "PNG: compressed data ends after 4 of 8 rows",
       .input = "@png-short-data.png",
       .reason = "cannot decode"},
      {.what = "PNG: zero width", .input = "@png-zero-width.png", .reason = "0x16 image: it has no pixels"},
      {.what = "PNG: zero height", .input = "@png-zero-height.png", .reason = "16x0 image: it has no pixels"},
      {.what = "JPEG: cut inside the tables", .input = "@jpeg-cut-in-header.jpg", .reason = "inside segment"},
      {.what = "JPEG: baseline cut at 50%",
       .input = "@jpeg-cut-50.jpg",
       .reason = "inside the compressed data of scan 1"},
      {.what = "JPEG: baseline without EOI", .input = "@jpeg-no-eoi.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: progressive cut at 30%",
       .input = "@progressive-cut-30.jpg",
       .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: progressive cut at 70%",
       .input = "@progressive-cut-70.jpg",
       .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: progressive without EOI",
       .input = "@progressive-no-eoi.jpg",
       .reason = "before the end-of-image marker"},
      {.what = "JPEG: progressive, first scan then EOI",
       .input = "@progressive-one-scan-eoi.jpg",
       .reason = "its scans end before the whole image was sent"},
      {.what = "JPEG: progressive, last scan missing, EOI",
       .input = "@progressive-last-scan-missing.jpg",
       .reason = "its scans end before the whole image was sent"},
      {.what = "JPEG: progressive, cut inside its last scan, EOI",
       .input = "@progressive-cut-in-last-scan-eoi.jpg",
       .reason = "its compressed data ends before the image does"},
      {.what = "JPEG: baseline cut at 50%, EOI",
       .input = "@jpeg-cut-50-eoi.jpg",
       .reason = "its compressed data ends before the image does"},
      {.what = "JPEG: SOS marker damaged", .input = "@jpeg-sos-damaged.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: marker code zeroed", .input = "@jpeg-marker-zeroed.jpg", .reason = "invalid marker FF00"},
      {.what = "JPEG: segment length too long",
       .input = "@jpeg-segment-too-long.jpg",
       .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: zero width in SOF", .input = "@jpeg-zero-width.jpg", .reason = "0x400 image: it has no pixels"},
      {.what = "TIFF: cut at 50%", .input = "@tiff-cut-50.tif", .reason = "truncated or corrupt TIFF"},
      {.what = "TIFF: header only", .input = "@tiff-header-only.tif", .reason = "beyond the end of the file"},
      {.what = "TIFF: 64-bit float pixels", .input = "@f64.tif", .reason = "unsupported pixel depth 64F"},
      {.what = "TIFF: 16-bit signed pixels", .input = "@s16.tif", .reason = "unsupported pixel depth 16S"},
      {.what = "BMP: cut at 50%", .input = "@bmp-cut-50.bmp", .reason = "cannot decode"},
      {.what = "BMP: headers only", .input = "@bmp-header-only.bmp", .reason = "cannot decode"},
      {.what = "BMP: zero width", .input = "@bmp-zero-width.bmp", .reason = "0x10 image: it has no pixels"},
      {.what = "BMP: negative width", .input = "@bmp-negative-width.bmp", .reason = "negative width -10"},
      {.what = "PAM: 2 channels (gray + alpha)", .input = "@gray-alpha.pam", .reason = "unsupported channel count 2"},
      {.what = "TIFF: 2 channels (gray + extra sample), which OpenCV reads as gray",
       .input = "@tiff-gray-extra-2-channels.tif",
       .reason = "unsupported channel count 2"},
      {.what = "TIFF: 5 channels (RGBA + extra sample)",
       .input = "@tiff-rgba-extra-5-channels.tif",
       .reason = "unsupported channel count 5"},
      {.what = "symbolic link loop as input", .input = "@loop-a.png", .reason = "symbolic link loop"},
      {.what = "batch: a --from line holding a NUL byte",
       .input = "",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--out-dir", "@out-dir", "--from", "@nul-list.txt"},
       .reason = "line 1 holds a NUL byte",
       .names = "--from",
       .output = ""},
  });
}

TEST_CASE("bad input matrix: images over the pixel limit exit 3 before decoding") {
  const std::string cap = memory_cap(1024);
  expect_all_refused({
      {.what = "PNG header claims 100000x100000",
       .input = "@png-100000x100000.png",
       .reason =
           "PNG header claims 100000x100000 pixels, more than the limit of 1073741824 (raise it with --max-pixels)",
       .shell_setup = cap},
      {.what = "TIFF (II) header claims 100000x100000",
       .input = "@tiff-100000x100000.tif",
       .reason = "TIFF header claims 100000x100000 pixels",
       .shell_setup = cap},
      {.what = "TIFF (MM) header claims 100000x100000",
       .input = "@tiff-mm-100000x100000.tif",
       .reason = "TIFF header claims 100000x100000 pixels",
       .shell_setup = cap},
      {.what = "BigTIFF header claims 100000x100000",
       .input = "@bigtiff-100000x100000.tif",
       .reason = "TIFF header claims 100000x100000 pixels",
       .shell_setup = cap},
      {.what = "JPEG SOF claims 65535x65535",
       .input = "@jpeg-65535x65535.jpg",
       .reason = "JPEG header claims 65535x65535 pixels",
       .shell_setup = cap},
      {.what = "BMP header claims 100000x100000 (top-down)",
       .input = "@bmp-100000x100000.bmp",
       .reason = "BMP header claims 100000x100000 pixels",
       .shell_setup = cap},
      // 2.7 GB decoded, which OpenCV's own limit would let through: only the header check
      // refuses it inside 1 GiB of address space.
      {.what = "PNG 30000x30000 with --max-pixels 100000000",
       .input = "@png-30000x30000.png",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--max-pixels", "100000000"},
       .reason = "30000x30000 pixels, more than the limit of 100000000",
       .shell_setup = cap},
      {.what = "--max-pixels below a normal PNG's size",
       .options = {"--filter", "gauss5", "--max-pixels", "262143"},
       .reason = "512x512 pixels, more than the limit of 262143"},
      {.what = "--max-pixels on a format read without header check (WebP)",
       .input = "@coffee.webp",
       .options = {"--filter", "gauss5", "--max-pixels", "1000"},
       .reason = "image has 600x400 pixels"},
      {.what = "within --max-pixels but wider than OpenCV's own limit",
       .input = "@bmp-2000000x1.bmp",
       .reason = "OPENCV_IO_MAX_IMAGE_WIDTH"},
      {.what = "within a raised --max-pixels but over OpenCV's own 2^30",
       .input = "@png-40000x40000.png",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--max-pixels", "2000000000"},
       .reason = "raise them with the environment variables OPENCV_IO_MAX_IMAGE_PIXELS",
       .shell_setup = cap},
  });
}

TEST_CASE("bad input matrix: look-alikes that must still be read") {
  TempDir dir;
  const cv::Mat coffee = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
  const std::string jpeg = encode(".jpg", coffee);
  const std::size_t after_soi = 2;
  const std::map<std::string, std::string> files = {
      {"jpeg-named.png", jpeg},  // content decides the format, as in OpenCV
      {"trailing-bytes.jpg", jpeg + std::string(100, '\0') + "camera trailer"},
      {"app-segment-with-ffd9.jpg",
       jpeg.substr(0, after_soi) + "\xFF\xE1" + big_endian(8, 2) + "\xFF\xD9\xFF\xD9\xFF\xD9" + jpeg.substr(after_soi)},
      {"progressive.jpg", encode(".jpg", coffee, {cv::IMWRITE_JPEG_PROGRESSIVE, 1})},
      {"gray-alpha.png", png_file(8, 8, 4, png_rows(8, 16))},
  };
  for (const auto& [file_name, bytes] : files) {
    const std::string name = file_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
    write_bytes(dir.file(name), bytes);
    const std::string out = dir.file("out-" + name + ".png");  // one per case: no earlier output can answer
    const auto result = run_cuconv({dir.file(name), out, "--filter", "gauss5", "--variant", "opencv"});
    INFO(name, "\n  stderr: ", result.err);
    CHECK(result.exit_code == 0);
    CHECK(cv::imread(out, cv::IMREAD_UNCHANGED).cols == (name == "gray-alpha.png" ? 8 : coffee.cols));
  }
  // The limit is inclusive: exactly 512x512 pixels pass --max-pixels 262144.
  const auto result = run_cuconv({sample("camera.png"), dir.file("limit.png"), "--filter", "gauss5", "--variant",
                                  "opencv", "--max-pixels", "262144"});
  CHECK(result.exit_code == 0);
}
