// SPDX-License-Identifier: Apache-2.0
// The bad-input matrix, the command: every class of filter error (exit 3), bad and conflicting
// options (exit 2) and outputs that cannot be written (exit 4), each refused before any output,
// through the real binary.
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

TEST_CASE("bad input matrix: every class of filter error exits 3") {
  struct BadFilter {
    const char* what;
    std::string spec;    ///< what --filter gets; the message must name it
    std::string reason;
  };
  const std::vector<BadFilter> filters = {
      {"empty filter file", "@empty.txt", "no filter values"},
      {"filter file of comments", "@comments.txt", "no filter values"},
      {"non-numeric value", "@word.txt", ":2: 'four' is not a number"},
      {"ragged rows", "@ragged.txt", ":2: row has 2 values, expected 3"},
      {"value left out between commas", "@missing-value.txt", "missing value before ','"},
      {"NaN weight", "@nan.txt", "non-finite value 'nan'"},
      {"weight overflowing a double", "@huge-value.txt", "non-finite value '1e999'"},
      {"inline inf weight", "3x1:1,inf,1", "non-finite value 'inf'"},
      {"128 columns in a file", "@wide.txt", "the maximum side is 127"},
      {"inline 128x1", "128x1:1", "the maximum side is 127"},
      {"inline wrong count for WxH", "3x3:1,2", "expected 9 values (3x3), got 2"},
      {"inline zero size", "0x3:1", "at least 1"},
      {"inline anchor outside", "3x3+5+0:1,1,1,1,1,1,1,1,1", "anchor +5+0 is outside the 3x3 filter"},
      {"unknown preset", "gaus5", "is not a preset"},
      {"box:0", "box:0", "N must be an integer from 1 to 127"},
      {"box:128", "box:128", "N must be an integer from 1 to 127"},
      {"box:x", "box:x", "N must be an integer"},
      {"gaussian without sigma", "gaussian:3", "expected gaussian:R,SIGMA"},
      {"gaussian sigma 0", "gaussian:3,0", "SIGMA must be greater than 0"},
      {"gaussian radius 64", "gaussian:64,2", "R must be an integer from 0 to 63"},
      {".mat scale 0", "@scale0.mat", ":1: scale must not be 0"},
      {".mat scale 1e-320: infinite weights after the division", "@scale-1e-320.mat", ":2: weight inf"},
      {".mat scale 1e-40: weights beyond float after the division", "@scale-1e-40.mat", "not a finite float"},
      {".mat offset beyond float", "@offset-1e39.mat", ":1: offset 1e+39 is not a finite float"},
      {"weight beyond float", "@weight-1e39.txt", ":1: weight 1e+39 is not a finite float"},
      {"inline weight beyond float", "3x1:1,1e39,1", "not a finite float"},
      {".mat header of one field", "@one-field.mat", ":1: bad header"},
      {".mat with fewer rows than its header", "@few-rows.mat", "the header says 3 rows, found 2"},
      {".mat with an extra row", "@extra-row.mat", ":3: extra row"},
      {"directory as filter", "@filters.d", "is a directory"},
      {"image file as filter", "@camera.png", "is not a number"},
  };
  std::vector<Refusal> rows;
  for (const BadFilter& filter : filters)
    rows.push_back({.what = filter.what, .options = {"--filter", filter.spec}, .reason = filter.reason, .names = filter.spec});
  expect_all_refused(rows);
}

TEST_CASE("bad input matrix: bad and conflicting options exit 2") {
  const std::vector<std::string> base = {"--filter", "gauss5", "--variant", "opencv"};
  const auto with = [&base](std::initializer_list<std::string> extra) {
    std::vector<std::string> options = base;
    options.insert(options.end(), extra);
    return options;
  };
  const ExitCode usage = ExitCode::usage;
  expect_all_refused({
      {.what = "unknown variant", .options = {"--filter", "gauss5", "--variant", "fastest"}, .code = usage,
       .reason = "fastest", .names = "--variant"},
      {.what = "unknown border", .options = with({"--border", "mirror"}), .code = usage, .reason = "mirror",
       .names = "--border"},
      {.what = "unknown depth", .options = with({"--depth", "64f"}), .code = usage, .reason = "64f", .names = "--depth"},
      {.what = "unknown alpha mode", .options = with({"--alpha", "drop"}), .code = usage, .reason = "drop",
       .names = "--alpha"},
      {.what = "unknown option", .options = with({"--bogus"}), .code = usage, .reason = "unknown option '--bogus'",
       .names = "--bogus"},
      {.what = "non-numeric delta", .options = with({"--delta", "abc"}), .code = usage, .reason = "abc",
       .names = "--delta"},
      {.what = "--border-value without --border constant", .options = with({"--border-value", "3"}), .code = usage,
       .reason = "only applies to --border constant", .names = "--border-value"},
      {.what = "--json without --compare", .options = with({"--json"}), .code = usage, .reason = "use it with --compare",
       .names = "--json"},
      {.what = "-q with -v", .options = with({"-q", "-v"}), .code = usage, .reason = "excludes", .names = "--quiet"},
      {.what = "--compare with the opencv variant", .options = with({"--compare"}), .code = usage,
       .reason = "choose a GPU --variant", .names = "--compare"},
      {.what = "no OUTPUT", .code = usage, .reason = "INPUT and OUTPUT are required", .names = "OUTPUT", .output = ""},
      {.what = "no INPUT and no OUTPUT", .input = "", .code = usage, .reason = "are required", .names = "INPUT",
       .output = ""},
      {.what = "no --filter", .options = {"--variant", "opencv"}, .code = usage, .reason = "is required",
       .names = "--filter"},
      {.what = "--anchor not X,Y", .options = with({"--anchor", "1;2"}), .code = usage, .reason = "expected X,Y",
       .names = "--anchor"},
      {.what = "--anchor outside the filter", .options = with({"--anchor", "7,0"}), .code = usage, .reason = "outside",
       .names = "anchor"},
      {.what = "depth pair filter2D refuses (32F to 8U)", .input = sample("camera_f32.tif"), .options = with({"--depth", "8u"}),
       .code = usage, .reason = "8U", .names = "32F", .output = "@out.tif"},
      {.what = "--max-pixels 0", .options = with({"--max-pixels", "0"}), .code = usage, .reason = "expected a whole number",
       .names = "--max-pixels"},
      {.what = "--max-pixels -5", .options = with({"--max-pixels", "-5"}), .code = usage, .reason = "got '-5'",
       .names = "--max-pixels"},
      {.what = "--max-pixels 2^64", .options = with({"--max-pixels", "18446744073709551616"}), .code = usage,
       .reason = "expected a whole number", .names = "--max-pixels"},
      {.what = "--gpu-memory not a size", .options = with({"--gpu-memory", "lots"}), .code = usage,
       .reason = "expected bytes as a whole number", .names = "--gpu-memory"},
      {.what = "--gpu-memory 0", .options = with({"--gpu-memory", "0"}), .code = usage, .reason = "got '0'",
       .names = "--gpu-memory"},
      {.what = "--gpu-memory with an unknown unit", .options = with({"--gpu-memory", "12Q"}), .code = usage,
       .reason = "got '12Q'", .names = "--gpu-memory"},
      {.what = "--gpu-memory beyond 2^64", .options = with({"--gpu-memory", "16777216T"}), .code = usage,
       .reason = "expected bytes as a whole number", .names = "--gpu-memory"},
      {.what = "--gpu-memory negative", .options = with({"--gpu-memory", "-1G"}), .code = usage, .reason = "got '-1G'",
       .names = "--gpu-memory"},
      {.what = "--quality on a PNG output", .options = with({"--quality", "80"}), .code = usage,
       .reason = "--quality applies to JPEG and WebP outputs", .names = "@out.png"},
      {.what = "--quality 0", .options = with({"--quality", "0"}), .code = usage, .reason = "not in range",
       .names = "--quality", .output = "@out.jpg"},
      {.what = "--quality 101", .options = with({"--quality", "101"}), .code = usage, .reason = "not in range",
       .names = "--quality", .output = "@out.jpg"},
      {.what = "--compression lzw on a PNG output", .options = with({"--compression", "lzw"}), .code = usage,
       .reason = "expected a level from 0 to 9", .names = "@out.png"},
      {.what = "--compression 5 on a TIFF output", .options = with({"--compression", "5"}), .code = usage,
       .reason = "expected none, lzw or deflate", .names = "@out.tif", .output = "@out.tif"},
      {.what = "--compression on a JPEG output", .options = with({"--compression", "9"}), .code = usage,
       .reason = "--compression applies to PNG (0-9) and TIFF", .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "--compression zip", .options = with({"--compression", "zip"}), .code = usage, .reason = "zip",
       .names = "--compression"},
      {.what = "output is the input", .code = usage, .reason = "output is the input file", .names = "@camera.png",
       .output = "@camera.png"},
      {.what = "output is the input through ./", .code = usage, .reason = "output is the input file",
       .names = "@./camera.png", .output = "@./camera.png"},
      {.what = "output is the input through a symlink", .code = usage, .reason = "output is the input file",
       .names = "@camera-link.png", .output = "@camera-link.png"},
      {.what = "output is the input through a hard link", .code = usage, .reason = "output is the input file",
       .names = "@camera-hard-link.png", .output = "@camera-hard-link.png"},
      // Batch mode (no OUTPUT): plans that would destroy an input or write what looks unfinished.
      {.what = "batch: an output is another input (--overwrite)", .input = "@batch.d",
       .options = with({"--out-dir", "@batch.d", "--name", "%s_b", "--overwrite"}), .code = usage,
       .reason = "is the input file", .names = "@batch.d/a_b.png", .output = ""},
      {.what = "batch: an output is another input (no --overwrite)", .input = "@batch.d",
       .options = with({"--out-dir", "@batch.d", "--name", "%s_b"}), .code = usage, .reason = "is the input file",
       .names = "@batch.d/a_b.png", .output = ""},
      {.what = "batch: --name '..'", .input = "@camera.png", .options = with({"--out-dir", "@out-dir", "--name", ".."}),
       .code = usage, .reason = "names a folder, not a file", .names = "--name '..'", .output = ""},
      {.what = "output named like a temporary file", .code = usage, .reason = "mark unfinished files",
       .names = "@.cuconv-tmp-out.png", .output = "@.cuconv-tmp-out.png"},
      {.what = "batch: --name '.cuconv-tmp-%s'", .input = "@camera.png",
       .options = with({"--out-dir", "@out-dir", "--name", ".cuconv-tmp-%s"}), .code = usage,
       .reason = "mark unfinished files", .names = "--name '.cuconv-tmp-%s'", .output = ""},
  });
}

TEST_CASE("bad input matrix: outputs that cannot be written exit 4") {
  const ExitCode output = ExitCode::output;
  std::vector<Refusal> rows = {
      {.what = "output is a directory named .png", .code = output, .reason = "is a directory", .names = "@out-is-dir.png",
       .output = "@out-is-dir.png"},
      {.what = "output is a directory", .code = output, .reason = "is a directory", .names = "@out-dir",
       .output = "@out-dir"},
      {.what = "output is a FIFO", .code = output, .reason = "not a regular file", .names = "@out-fifo.png",
       .output = "@out-fifo.png"},
      // Checked before anything else: as root, the final rename would replace the device node.
      {.what = "output is a device (/dev/full)", .code = output, .reason = "not a regular file", .names = "/dev/full",
       .output = "/dev/full"},
      {.what = "output folder missing", .code = output, .reason = "does not exist", .names = "@no-such-folder",
       .output = "@no-such-folder/out.png"},
      {.what = "output folder not writable (/proc)", .code = output, .reason = "cannot create a file in /proc",
       .names = "/proc/cuconv-test.png", .output = "/proc/cuconv-test.png"},
      // write() fails with EFBIG at 8 KiB, as it fails with ENOSPC on a full disk; SIGXFSZ is
      // ignored so that the failure reaches cuconv instead of killing it.
      {.what = "disk full while writing", .code = output, .reason = "write failed", .names = "@out.png",
       .shell_setup = "trap '' XFSZ; ulimit -f 16"},
      {.what = "disk full while writing a TIFF (libtiff path)", .code = output, .reason = "write failed",
       .names = "@out.tif", .output = "@out.tif", .shell_setup = "trap '' XFSZ; ulimit -f 16"},
      // The file size limit with SIGXFSZ at its default disposition, which would kill the process
      // mid-write and leave its temporary file: cuconv ignores the signal, so the write fails.
      {.what = "file size limit (ulimit -f), SIGXFSZ not ignored by the caller", .code = output,
       .reason = "write failed: File too large", .names = "@out.png",
       .shell_setup = "ulimit -f 16"},
      {.what = "batch: file size limit (ulimit -f), SIGXFSZ not ignored by the caller", .input = "@camera.png",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--out-dir", "@.", "--name", "%s_big"}, .code = output,
       .reason = "write failed: File too large",
       .names = "@camera_big.png", .output = "", .shell_setup = "ulimit -f 16"},
      {.what = "float result to PNG", .options = {"--filter", "gauss5", "--variant", "opencv", "--depth", "32f"},
       .code = output, .reason = ".png cannot hold 32F", .names = "@out.png"},
      {.what = "16S result to PNG", .options = {"--filter", "gauss5", "--variant", "opencv", "--depth", "16s"},
       .code = output, .reason = ".png cannot hold 16S", .names = "@out.png"},
      {.what = "float image to JPEG", .input = sample("camera_f32.tif"), .code = output, .reason = ".jpg cannot hold 32F",
       .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "16-bit image to JPEG", .input = sample("chessboard_GRAY_U16.tif"), .code = output,
       .reason = ".jpg cannot hold 16U", .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "16-bit image to BMP", .input = sample("chessboard_GRAY_U16.tif"), .code = output,
       .reason = ".bmp cannot hold 16U", .names = "@out.bmp", .output = "@out.bmp"},
      {.what = "alpha to JPEG", .input = sample("logo.png"), .code = output, .reason = "cannot store an alpha channel",
       .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "unknown extension", .code = output, .reason = "cannot write '.xyz' files", .names = "@out.xyz",
       .output = "@out.xyz"},
      {.what = "no extension", .code = output, .reason = "has no extension to pick the output format", .names = "@out", .output = "@out"},
  };
  if (::geteuid() != 0) {
    rows.push_back({.what = "output folder without write permission", .code = output, .reason = "cannot create a file",
                    .names = "@read-only", .output = "@read-only/out.png"});
  } else {
    MESSAGE("running as root, which writes into a 0555 folder: the read-only folder row is covered by /proc instead");
  }
  expect_all_refused(rows);
}
