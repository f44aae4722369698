// SPDX-License-Identifier: Apache-2.0
// Filter file and inline formats, load_filter's resolution order and describe_filter, with their
// error messages (src/filter/filter_parse.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "cuconv/error.hpp"
#include "cuconv/filter.hpp"
#include "filter_support.hpp"

using cuconv::Filter;
using cuconv::test::filters::check_error;
using cuconv::test::filters::error_of;
using cuconv::test::filters::TempDir;

// ---- plain matrix ------------------------------------------------------------------------------

TEST_CASE("plain matrix: spaces, commas, tabs, comments and blank lines") {
  const Filter f = cuconv::parse_plain_matrix(
      "# a 3x2 filter\n"
      "\n"
      "1 2\t3   # first row\n"
      "  \t\n"
      "4,5, 6,\n"
      "# trailing comment\n",
      "mine.txt");
  CHECK(f.width == 3);
  CHECK(f.height == 2);
  CHECK(f.weights == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(f.origin == "mine.txt");
  CHECK(f.offset == 0.0);
  CHECK(f.anchor_x == -1);
  CHECK(f.anchor_y == -1);
  CHECK(f.resolved_anchor_x() == 1);
  CHECK(f.resolved_anchor_y() == 1);
  CHECK(f.at(1, 2) == 6.0);
}

TEST_CASE("plain matrix: number forms, CRLF, even and non-square sizes") {
  const Filter f = cuconv::parse_plain_matrix("-1.5 +2 .25 1e-3\r\n0 -0 3E2 1e-400\r\n", "crlf.txt");
  CHECK(f.width == 4);
  CHECK(f.height == 2);
  CHECK(f.weights == std::vector<double>{-1.5, 2, 0.25, 1e-3, 0, 0, 300, 0});
  CHECK(f.resolved_anchor_x() == 2);  // even sides: anchor at width / 2, as cv::filter2D
  CHECK(f.resolved_anchor_y() == 1);

  const Filter column = cuconv::parse_plain_matrix("1\n2\n3\n4\n5\n", "column.txt");
  CHECK(column.width == 1);
  CHECK(column.height == 5);
  CHECK(column.weights == std::vector<double>{1, 2, 3, 4, 5});
}

TEST_CASE("plain matrix: all-zero weights are allowed") {
  const Filter f = cuconv::parse_plain_matrix("0 0\n0 0\n", "zeros.txt");
  CHECK(f.weights == std::vector<double>(4, 0.0));
}

TEST_CASE("plain matrix errors name the origin, the line and the problem") {
  auto plain = [](std::string_view text) { return [text] { return cuconv::parse_plain_matrix(text, "k.txt"); }; };
  check_error(plain("# header\n1 2 3\n\n4 5\n"), {"k.txt:4:", "row has 2 values, expected 3"});
  check_error(plain("1 2 3\n4 5 6 7\n"), {"k.txt:2:", "row has 4 values, expected 3"});
  check_error(plain("1 2\n3 abc\n"), {"k.txt:2:", "'abc' is not a number"});
  check_error(plain("1 2x\n"), {"k.txt:1:", "'2x' is not a number"});
  check_error(plain("0x10\n"), {"k.txt:1:", "'0x10' is not a number"});
  check_error(plain("1 nan\n"), {"k.txt:1:", "non-finite value 'nan'"});
  check_error(plain("\n\n-inf 1\n"), {"k.txt:3:", "non-finite value '-inf'"});
  check_error(plain("1 1e999\n"), {"k.txt:1:", "non-finite value '1e999'"});
  check_error(plain("1,,2\n"), {"k.txt:1:", "missing value before ','"});
  check_error(plain(""), {"k.txt", "no filter values"});
  check_error(plain("# only\n\n  # comments\n"), {"k.txt", "no filter values"});
  // Separators alone (found by fuzz_filter_parser: a 0x1 filter came back).
  check_error(plain("\" \n "), {"k.txt:1:", "no values on this line"});
  check_error(plain("1 2\n\" \"\n"), {"k.txt:2:", "no values on this line"});
}

TEST_CASE("plain matrix: sides above kMaxFilterSide are rejected") {
  CHECK(cuconv::kMaxFilterSide == 127);
  const std::string wide_row = [] {
    std::string row;
    for (int i = 0; i < 128; ++i) row += "1 ";
    return row + "\n";
  }();
  check_error([&] { return cuconv::parse_plain_matrix(wide_row + wide_row + wide_row, "w.txt"); },
              {"w.txt:1:", "filter is 128x3, the maximum side is 127"});

  std::string tall = "# tall\n";
  for (int i = 0; i < 200; ++i) tall += "1\n";
  check_error([&] { return cuconv::parse_plain_matrix(tall, "t.txt"); },
              {"t.txt:129:", "filter is 1x200, the maximum side is 127"});

  std::string largest;
  for (int i = 0; i < 127; ++i) largest += "1\n";
  CHECK(cuconv::parse_plain_matrix(largest, "ok.txt").height == 127);
}

// ---- libvips .mat ------------------------------------------------------------------------------

TEST_CASE("vips .mat: header, scale, offset and comments") {
  const Filter plain = cuconv::parse_vips_mat("2 3\n1 2\n3 4\n5 6\n", "a.mat");
  CHECK(plain.width == 2);
  CHECK(plain.height == 3);
  CHECK(plain.weights == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(plain.offset == 0.0);
  CHECK(plain.origin == "a.mat");

  const Filter with_scale = cuconv::parse_vips_mat("# blur\n\n3 1 4\n1 2 1\n", "b.mat");
  CHECK(with_scale.weights == std::vector<double>{0.25, 0.5, 0.25});
  CHECK(with_scale.offset == 0.0);

  const Filter with_offset = cuconv::parse_vips_mat("2 2 -2 128  # scale, offset\n2, 4\n\n# comment\n6\t8\n", "c.mat");
  CHECK(with_offset.weights == std::vector<double>{-1, -2, -3, -4});
  CHECK(with_offset.offset == 128.0);
  CHECK(with_offset.resolved_anchor_x() == 1);
  CHECK(with_offset.resolved_anchor_y() == 1);

  // Quotation marks separate numbers, as in libvips (a spreadsheet's "1","2" export).
  const Filter quoted = cuconv::parse_vips_mat("\"2\",\"1\",\"4\"\n\"1\",\"3\"\n", "q.mat");
  CHECK(quoted.weights == std::vector<double>{0.25, 0.75});
}

TEST_CASE("vips .mat errors") {
  auto mat = [](std::string_view text) { return [text] { return cuconv::parse_vips_mat(text, "f.mat"); }; };
  check_error(mat("# c\n3 3 0\n1 1 1\n1 1 1\n1 1 1\n"), {"f.mat:2:", "scale must not be 0"});
  check_error(mat("3\n1 1 1\n"), {"f.mat:1:", "bad header"});
  check_error(mat("3 1 1 0 5\n1 1 1\n"), {"f.mat:1:", "bad header"});
  check_error(mat("0 1\n"), {"f.mat:1:", "bad header", "positive integers"});
  check_error(mat("2.5 1\n1 1\n"), {"f.mat:1:", "bad header", "positive integers"});
  check_error(mat("three 1\n1 1 1\n"), {"f.mat:1:", "'three' is not a number"});
  check_error(mat("200 3\n"), {"f.mat:1:", "filter is 200x3, the maximum side is 127"});
  check_error(mat("3 128\n"), {"f.mat:1:", "filter is 3x128, the maximum side is 127"});
  check_error(mat("2 1\n1 2\n3 4\n"), {"f.mat:3:", "extra row", "1 rows"});
  check_error(mat("2 3\n1 2\n3 4\n"), {"f.mat:3:", "header says 3 rows, found 2"});
  check_error(mat("3 2\n1 2 3\n# c\n4 5\n"), {"f.mat:4:", "row has 2 values, expected 3"});
  check_error(mat("2 1\n1 x\n"), {"f.mat:2:", "'x' is not a number"});
  check_error(mat("2 1\n1 NaN\n"), {"f.mat:2:", "non-finite value 'NaN'"});
  check_error(mat("2 1 inf\n1 1\n"), {"f.mat:1:", "non-finite value 'inf'"});
  check_error(mat("# nothing\n"), {"f.mat", "no filter values"});
}

// ---- inline ------------------------------------------------------------------------------------

TEST_CASE("inline filters: WxH, N, anchors, separators") {
  const Filter square = cuconv::parse_inline_filter("3x3:0,1,0,1,-4,1,0,1,0");
  CHECK(square.width == 3);
  CHECK(square.height == 3);
  CHECK(square.weights == std::vector<double>{0, 1, 0, 1, -4, 1, 0, 1, 0});
  CHECK(square.anchor_x == -1);
  CHECK(square.anchor_y == -1);
  CHECK(square.origin == "inline filter");

  const Filter n_form = cuconv::parse_inline_filter("2:1 2, 3,4");
  CHECK(n_form.width == 2);
  CHECK(n_form.height == 2);
  CHECK(n_form.weights == std::vector<double>{1, 2, 3, 4});

  const Filter anchored = cuconv::parse_inline_filter("3x2+2+0:1,2,3,4,5,6.5");
  CHECK(anchored.width == 3);
  CHECK(anchored.height == 2);
  CHECK(anchored.anchor_x == 2);
  CHECK(anchored.anchor_y == 0);
  CHECK(anchored.resolved_anchor_x() == 2);
  CHECK(anchored.weights.back() == 6.5);

  const Filter even = cuconv::parse_inline_filter("4+0+3:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1");
  CHECK(even.width == 4);
  CHECK(even.height == 4);
  CHECK(even.anchor_x == 0);
  CHECK(even.anchor_y == 3);
}

TEST_CASE("inline filter errors") {
  auto inl = [](std::string_view text) { return [text] { return cuconv::parse_inline_filter(text); }; };
  check_error(inl("3x3:1,2,3"), {"inline filter '3x3:1,2,3':", "expected 9 values (3x3), got 3"});
  check_error(inl("2:1,2,3,4,5"), {"inline filter '2:1,2,3,4,5':", "expected 4 values", "got 5"});
  check_error(inl("3x3:"), {"inline filter '3x3:':", "no filter values"});
  check_error(inl("3x1+3+0:1,2,3"), {"inline filter '3x1+3+0:1,2,3':", "anchor +3+0 is outside"});
  check_error(inl("3x1+0+1:1,2,3"), {"anchor +0+1 is outside the 3x1 filter"});
  check_error(inl("3x1-1+0:1,2,3"), {"anchor -1+0 is outside"});
  check_error(inl("200x3:1"), {"inline filter '200x3:1':", "filter is 200x3, the maximum side is 127"});
  check_error(inl("3x999999999999:1"), {"the maximum side is 127"});
  check_error(inl("0x3:1"), {"inline filter '0x3:1':", "at least 1"});
  check_error(inl("2x1:1,abc"), {"inline filter '2x1:1,abc':", "'abc' is not a number"});
  check_error(inl("2x1:1,nan"), {"non-finite value 'nan'"});
  check_error(inl("3x3"), {"inline filter '3x3':", "expected WxH"});
}

// ---- load_filter: resolution order, files ------------------------------------------------------

TEST_CASE("load_filter reads inline strings") {
  const Filter f = cuconv::load_filter("1x3+0+2:1,2,3");
  CHECK(f.height == 3);
  CHECK(f.anchor_y == 2);
  CHECK(f.weights == std::vector<double>{1, 2, 3});
  check_error([] { return cuconv::load_filter("2x2:1,2,3"); }, {"inline filter '2x2:1,2,3':", "expected 4 values"});
}

TEST_CASE("load_filter reads plain and .mat files by extension") {
  const TempDir dir;
  const std::string txt = dir.write("k.txt", "# plain\n1, 2\n3, 4\n");
  const Filter plain = cuconv::load_filter(txt);
  CHECK(plain.weights == std::vector<double>{1, 2, 3, 4});
  CHECK(plain.origin == txt);

  // A .mat header parsed as a plain matrix would be a ragged row: the extension decides.
  const std::string mat = dir.write("k.MAT", "2 1 2 10\n1 3\n");
  const Filter vips = cuconv::load_filter(mat);
  CHECK(vips.width == 2);
  CHECK(vips.height == 1);
  CHECK(vips.weights == std::vector<double>{0.5, 1.5});
  CHECK(vips.offset == 10.0);
  CHECK(vips.origin == mat);

  const std::string no_extension = dir.write("kernel", "1 2 1\n");
  CHECK(cuconv::load_filter(no_extension).weights == std::vector<double>{1, 2, 1});

  const std::string broken = dir.write("broken.txt", "1 2\n\n3\n");
  check_error([&] { return cuconv::load_filter(broken); }, {broken + ":3:", "row has 1 values, expected 2"});
  const std::string broken_mat = dir.write("broken.mat", "# c\n2 2 0\n1 1\n1 1\n");
  check_error([&] { return cuconv::load_filter(broken_mat); }, {broken_mat + ":2:", "scale must not be 0"});
}

TEST_CASE("load_filter: a preset name wins over a file of that name") {
  const TempDir dir;
  const std::string path = dir.write("sharpen", "7\n");
  CHECK(cuconv::load_filter(path).weights == std::vector<double>{7});  // a path is not a name
  CHECK(cuconv::load_filter("sharpen").width == 3);
}

TEST_CASE("load_filter errors: directory, missing file, unknown name") {
  const TempDir dir;
  const std::string directory = dir.path().string();
  check_error([&] { return cuconv::load_filter(directory); }, {directory, "is a directory"});

  const std::string missing = (dir.path() / "missing.txt").string();
  check_error([&] { return cuconv::load_filter(missing); }, {"filter file '" + missing + "': no such file"});
  check_error([] { return cuconv::load_filter("sharp.mat"); }, {"filter file 'sharp.mat': no such file"});
  check_error(
      [] { return cuconv::load_filter("gauss9"); },
      {"filter 'gauss9' is not a preset", "did you mean 'gauss3', 'gauss5' or 'gauss7'?", "(see `preset_names`)"});
  check_error([] { return cuconv::load_filter("sobelx"); }, {"did you mean 'sobel-x'"});
  check_error([] { return cuconv::load_filter("gausian:3,1"); }, {"did you mean 'gaussian:'?"});
  check_error([] { return cuconv::load_filter("zzzzzzzz"); }, {"filter 'zzzzzzzz' is not a preset"});
  CHECK(error_of([] { return cuconv::load_filter("zzzzzzzz"); }).find("did you mean") == std::string::npos);
  check_error([] { return cuconv::load_filter(""); }, {"filter '' is not a preset"});
}

// ---- describe_filter ---------------------------------------------------------------------------

TEST_CASE("describe_filter prints the header and aligned rows") {
  Filter f = cuconv::parse_inline_filter("3x2+0+1:1,-0.5,100,0.25,2,-3");
  f.offset = 128;
  CHECK(cuconv::describe_filter(f) ==
        "inline filter: 3x2, anchor (0,1), offset 128\n"
        "     1  -0.5  100\n"
        "  0.25     2   -3\n");

  const std::string box3 = cuconv::describe_filter(cuconv::load_filter("box3"));
  CHECK(box3.rfind("preset box3: 3x3, anchor (1,1), offset 0\n", 0) == 0);
  CHECK(box3.find("0.111111111  0.111111111  0.111111111\n") != std::string::npos);
}

// ---- issue 49: any-case names, other tools' words ----------------------------------------------

TEST_CASE("load_filter: presets and parametric names in any letter case") {
  // Before issue 49 "GAUSS5" and "Sobel-X" were refused though the README says values take any case.
  CHECK(cuconv::load_filter("GAUSS5").weights == cuconv::load_filter("gauss5").weights);
  CHECK(cuconv::load_filter("GAUSS5").origin == "preset gauss5");
  CHECK(cuconv::load_filter("Sobel-X").weights == cuconv::load_filter("sobel-x").weights);
  CHECK(cuconv::load_filter("BOX:3").weights == cuconv::load_filter("box:3").weights);
  CHECK(cuconv::load_filter("Gaussian:2,1").weights == cuconv::load_filter("gaussian:2,1").weights);
}

TEST_CASE("load_filter: other tools' words for a filter are pointed to cuconv's") {
  check_error([] { return cuconv::load_filter("blur"); },
              {"filter 'blur' is not a preset", "did you mean 'gauss5' or 'box:N'?"});
  check_error([] { return cuconv::load_filter("MEAN"); }, {"did you mean 'box:N'?"});
  // A border's word is no filter: no suggestion from the border list.
  CHECK(error_of([] { return cuconv::load_filter("mirror"); }).find("reflect") == std::string::npos);
}
