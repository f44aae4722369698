// SPDX-License-Identifier: Apache-2.0
// Filter formats, presets and their error messages (src/filter/filter_parse.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "cuconv/error.hpp"
#include "cuconv/filter.hpp"

namespace {

namespace fs = std::filesystem;
using cuconv::Filter;

/// Runs `parse`, which must throw a bad_input cuconv::Error; returns its message.
template <class Parse>
std::string error_of(Parse&& parse) {
  try {
    (void)parse();
  } catch (const cuconv::Error& error) {
    CHECK(error.kind() == cuconv::ErrorKind::bad_input);
    return error.what();
  }
  FAIL("expected a cuconv::Error");
  return {};
}

/// Checks that the message of the error thrown by `parse` holds every one of `parts`.
template <class Parse>
void check_error(Parse&& parse, std::initializer_list<std::string_view> parts) {
  const std::string message = error_of(parse);
  for (const std::string_view part : parts) {
    CHECK_MESSAGE(message.find(part) != std::string::npos,
                  "message \"" << message << "\" lacks \"" << std::string(part) << "\"");
  }
}

double sum_of(const Filter& filter) {
  return std::accumulate(filter.weights.begin(), filter.weights.end(), 0.0);
}

std::vector<double> outer_product(const cv::Mat& kernel) {
  std::vector<double> weights;
  for (int row = 0; row < kernel.rows; ++row) {
    for (int col = 0; col < kernel.rows; ++col) {
      weights.push_back(kernel.at<double>(row) * kernel.at<double>(col));
    }
  }
  return weights;
}

/// Integer matrix divided by `scale`, as the .mat parser computes it.
std::vector<double> scaled(std::initializer_list<double> values, double scale) {
  std::vector<double> weights;
  for (const double value : values) weights.push_back(value / scale);
  return weights;
}

/// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = fs::temp_directory_path() /
            ("cuconv_test_filters_" + std::to_string(stamp) + "_" +
             std::to_string(std::random_device{}()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] std::string write(const std::string& name, std::string_view text) const {
    const fs::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

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
  auto plain = [](std::string_view text) {
    return [text] { return cuconv::parse_plain_matrix(text, "k.txt"); };
  };
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

  const Filter with_offset =
      cuconv::parse_vips_mat("2 2 -2 128  # scale, offset\n2, 4\n\n# comment\n6\t8\n", "c.mat");
  CHECK(with_offset.weights == std::vector<double>{-1, -2, -3, -4});
  CHECK(with_offset.offset == 128.0);
  CHECK(with_offset.resolved_anchor_x() == 1);
  CHECK(with_offset.resolved_anchor_y() == 1);

  // Quotation marks separate numbers, as in libvips (a spreadsheet's "1","2" export).
  const Filter quoted = cuconv::parse_vips_mat("\"2\",\"1\",\"4\"\n\"1\",\"3\"\n", "q.mat");
  CHECK(quoted.weights == std::vector<double>{0.25, 0.75});
}

TEST_CASE("vips .mat errors") {
  auto mat = [](std::string_view text) {
    return [text] { return cuconv::parse_vips_mat(text, "f.mat"); };
  };
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

// ---- presets -----------------------------------------------------------------------------------

TEST_CASE("every preset says what it does in one line without a comment sign") {
  for (const std::string& name : cuconv::preset_names()) {
    CAPTURE(name);
    const std::string summary = cuconv::preset_summary(name);
    CHECK(summary.size() > 10);
    CHECK(summary.find('#') == std::string::npos);
  }
  CHECK(cuconv::preset_summary("box3") == "3x3 box (mean) filter, every weight 1/9");
  CHECK(cuconv::preset_summary("nonesuch").empty());
}

TEST_CASE("filters/*.mat: the header on the first line, comments only after the rows (libvips' rule)") {
  // libvips' matrixload reads the first line as the header and refuses a '#' there; text after
  // the last row is ignored. cuconv's reader agrees with every preset file as it is.
  for (const std::string& name : cuconv::preset_names()) {
    const std::filesystem::path path = std::filesystem::path(CUCONV_TEST_FILTERS) / (name + ".mat");
    CAPTURE(path.string());
    std::ifstream in(path);
    REQUIRE(in);
    std::string line;
    std::getline(in, line);
    CHECK(line.find('#') == std::string::npos);
    const Filter f = cuconv::load_filter(path.string());
    for (int row = 0; row < f.height; ++row) {
      REQUIRE(std::getline(in, line));
      CHECK(line.find('#') == std::string::npos);
      CHECK_FALSE(line.empty());
    }
    CHECK(f.weights == cuconv::load_filter(name).weights);
  }
}

// Marked skip: the CTest entry libvips_matrixload runs it (--no-skip) where vips is installed and
// reports Skipped where it is not (tests/libvips_test.sh), so no run passes it without vips.
TEST_CASE("filters/*.mat load in libvips (vips matrixload) with the same weights" * doctest::skip()) {
  REQUIRE_MESSAGE(std::system("vips --version > /dev/null 2>&1") == 0,
                  "the vips command is not installed (Debian: apt-get install libvips-tools)");
  const TempDir dir;
  for (const std::string& name : cuconv::preset_names()) {
    CAPTURE(name);
    const std::string source = (std::filesystem::path(CUCONV_TEST_FILTERS) / (name + ".mat")).string();
    const std::string copy = (dir.path() / (name + "-vips.mat")).string();
    // matrixload, then matrixsave: libvips writes the matrix it read, scale and offset included.
    const std::string command = "vips matrixload '" + source + "' '" + copy + "' 2>&1";
    REQUIRE_MESSAGE(std::system(command.c_str()) == 0, command);
    const Filter theirs = cuconv::load_filter(copy);
    const Filter ours = cuconv::load_filter(name);
    CHECK(theirs.width == ours.width);
    CHECK(theirs.height == ours.height);
    REQUIRE(theirs.weights.size() == ours.weights.size());
    for (std::size_t i = 0; i < ours.weights.size(); ++i) CHECK(theirs.weights[i] == doctest::Approx(ours.weights[i]));
    CHECK(theirs.offset == ours.offset);
  }
}

TEST_CASE("preset names are the documented set, sorted") {
  const std::vector<std::string> expected = {
      "box3",     "box5",     "edge",    "emboss",  "gauss3",  "gauss5",  "gauss7",
      "laplacian", "scharr-x", "scharr-y", "sharpen", "sobel-x", "sobel-y"};
  CHECK(cuconv::preset_names() == expected);
}

TEST_CASE("every preset loads with its exact weights") {
  struct Expected {
    const char* name;
    int side;
    std::vector<double> weights;
    double sum;
  };
  const std::vector<Expected> presets = {
      {"box3", 3, std::vector<double>(9, 1.0 / 9), 1.0},
      {"box5", 5, std::vector<double>(25, 1.0 / 25), 1.0},
      {"sharpen", 3, {0, -1, 0, -1, 5, -1, 0, -1, 0}, 1.0},
      {"laplacian", 3, {0, 1, 0, 1, -4, 1, 0, 1, 0}, 0.0},
      {"sobel-x", 3, {-1, 0, 1, -2, 0, 2, -1, 0, 1}, 0.0},
      {"sobel-y", 3, {-1, -2, -1, 0, 0, 0, 1, 2, 1}, 0.0},
      {"scharr-x", 3, {-3, 0, 3, -10, 0, 10, -3, 0, 3}, 0.0},
      {"scharr-y", 3, {-3, -10, -3, 0, 0, 0, 3, 10, 3}, 0.0},
      {"emboss", 3, {-2, -1, 0, -1, 1, 1, 0, 1, 2}, 1.0},
      {"edge", 3, {-1, -1, -1, -1, 8, -1, -1, -1, -1}, 0.0},
      {"gauss3", 3, scaled({1, 2, 1, 2, 4, 2, 1, 2, 1}, 16), 1.0},
  };
  for (const Expected& expected : presets) {
    CAPTURE(expected.name);
    const Filter f = cuconv::load_filter(expected.name);
    CHECK(f.width == expected.side);
    CHECK(f.height == expected.side);
    CHECK(f.weights == expected.weights);
    CHECK(sum_of(f) == doctest::Approx(expected.sum));
    CHECK(f.offset == 0.0);
    CHECK(f.anchor_x == -1);
    CHECK(f.anchor_y == -1);
    CHECK(f.origin == std::string("preset ") + expected.name);
  }
  for (const char* name : {"gauss5", "gauss7"}) {
    CAPTURE(name);
    CHECK(sum_of(cuconv::load_filter(name)) == doctest::Approx(1.0));
  }
}

TEST_CASE("gauss3/5/7 are exactly OpenCV's fixed GaussianBlur kernels") {
  for (const int side : {3, 5, 7}) {
    CAPTURE(side);
    const Filter f = cuconv::load_filter("gauss" + std::to_string(side));
    CHECK(f.width == side);
    CHECK(f.height == side);
    CHECK(f.weights == outer_product(cv::getGaussianKernel(side, 0, CV_64F)));
  }
  const Filter gauss7 = cuconv::load_filter("gauss7");
  CHECK(gauss7.at(3, 3) == 324.0 / 4096);
  CHECK(gauss7.at(0, 0) == 4.0 / 4096);
}

// ---- parametric --------------------------------------------------------------------------------

TEST_CASE("box:N") {
  const Filter box4 = cuconv::load_filter("box:4");
  CHECK(box4.width == 4);
  CHECK(box4.height == 4);
  CHECK(box4.weights == std::vector<double>(16, 1.0 / 16));
  CHECK(box4.origin == "box:4");
  CHECK(cuconv::load_filter("box:1").weights == std::vector<double>{1.0});
  CHECK(cuconv::load_filter("box:3").weights == cuconv::load_filter("box3").weights);
  CHECK(cuconv::load_filter("box:127").width == 127);
  for (const char* bad : {"box:0", "box:128", "box:-3", "box:x", "box:3.5", "box:"}) {
    CAPTURE(bad);
    check_error([bad] { return cuconv::load_filter(bad); },
                {std::string("filter '") + bad + "'", "from 1 to 127"});
  }
}

TEST_CASE("gaussian:R,SIGMA") {
  const Filter g = cuconv::load_filter("gaussian:3,1.5");
  CHECK(g.width == 7);
  CHECK(g.height == 7);
  CHECK(g.weights == outer_product(cv::getGaussianKernel(7, 1.5, CV_64F)));
  CHECK(sum_of(g) == doctest::Approx(1.0));
  CHECK(g.origin == "gaussian:3,1.5");
  // R 0: the radius cv::GaussianBlur picks for ksize 0 on 8-bit images, side = round(6 SIGMA + 1) | 1.
  for (const auto& [spec, side] : {std::pair{"gaussian:0,1", 7}, std::pair{"gaussian:0,1.5", 11},
                                   std::pair{"gaussian:0,0.3", 3}, std::pair{"gaussian:0,2", 13}}) {
    CAPTURE(spec);
    const Filter auto_radius = cuconv::load_filter(spec);
    CHECK(auto_radius.width == side);
    CHECK(auto_radius.height == side);
    CHECK(sum_of(auto_radius) == doctest::Approx(1.0));
  }
  // ImageMagick's spelling: name in any case, RxSIGMA.
  CHECK(cuconv::load_filter("Gaussian:3x1.5").weights == g.weights);
  CHECK(cuconv::load_filter("GAUSSIAN:3,1.5").weights == g.weights);
  CHECK(cuconv::load_filter("Gaussian:0x1").width == 7);
  CHECK(cuconv::load_filter("gaussian:63,20").width == 127);

  auto load = [](const char* spec) { return [spec] { return cuconv::load_filter(spec); }; };
  check_error(load("gaussian:64,1"), {"filter 'gaussian:64,1'", "R must be an integer from 0 to 63"});
  check_error(load("gaussian:-1,1"), {"R must be an integer"});
  check_error(load("gaussian:3"), {"filter 'gaussian:3'", "expected gaussian:R,SIGMA"});
  check_error(load("gaussian:3,0"), {"SIGMA must be greater than 0"});
  check_error(load("gaussian:3,-1"), {"SIGMA must be greater than 0"});
  check_error(load("gaussian:3,inf"), {"non-finite value 'inf'"});
  check_error(load("gaussian:3,nan"), {"non-finite value 'nan'"});
  check_error(load("gaussian:3,wide"), {"'wide' is not a number"});
  check_error(load("gaussian:0,25"), {"SIGMA 25 needs a radius over 63"});
  check_error(load("gaussian:3,1,2"), {"expected gaussian:R,SIGMA"});
}

TEST_CASE("gaussian:0,SIGMA blurs as cv::GaussianBlur with ksize 0 does (8-bit)") {
  cv::Mat image(64, 64, CV_8UC1);
  cv::randu(image, 0, 256);
  for (const double sigma : {0.8, 1.0, 1.7}) {
    CAPTURE(sigma);
    const Filter f = cuconv::load_filter("gaussian:0," + std::to_string(sigma));
    cv::Mat mine;
    cv::Mat theirs;
    cv::filter2D(image, mine, -1, cv::Mat(f.height, f.width, CV_64F, const_cast<double*>(f.weights.data())));
    cv::GaussianBlur(image, theirs, cv::Size(0, 0), sigma);
    // GaussianBlur sums 8-bit images in fixed point: the results may differ by one step, never more.
    CHECK(cv::norm(mine, theirs, cv::NORM_INF) <= 1.0);
    CHECK(cv::norm(image, theirs, cv::NORM_INF) > 10.0);  // the 1x1 identity it used to be is far off
  }
}

/// Values below come from the formulas of docs/filters.md, evaluated on their own (Python, math
/// module only), not from this code.
TEST_CASE("named kernels: unsharp, log, dog, disk, motion have the documented weights") {
  auto near = [](double value) { return doctest::Approx(value).epsilon(1e-9); };

  const Filter unsharp = cuconv::load_filter("unsharp:1,1,2");
  REQUIRE(unsharp.width == 3);
  CHECK(unsharp.at(0, 0) == near(-0.150227215908));
  CHECK(unsharp.at(0, 1) == near(-0.247682806306));
  CHECK(unsharp.at(1, 1) == near(2.59164008886));
  CHECK(sum_of(unsharp) == doctest::Approx(1.0));  // flat areas unchanged
  CHECK(cuconv::load_filter("unsharp:2,1,0").at(2, 2) == 1.0);  // AMOUNT 0: the image as it was
  CHECK(cuconv::load_filter("unsharp:0,1,1").width == 7);

  const Filter log = cuconv::load_filter("log:1,1");
  REQUIRE(log.width == 3);
  CHECK(log.at(0, 0) == near(0.100413947084));
  CHECK(log.at(0, 1) == near(-0.0234274560691));
  CHECK(log.at(1, 1) == near(-0.307945964059));
  CHECK(sum_of(log) == doctest::Approx(0.0).epsilon(1e-12));
  const Filter log2 = cuconv::load_filter("log:2,1.4");
  REQUIRE(log2.width == 5);
  CHECK(log2.at(0, 0) == near(0.0254883935403));
  CHECK(log2.at(0, 1) == near(0.0199288748483));
  CHECK(log2.at(0, 2) == near(0.0132902466211));
  CHECK(log2.at(2, 2) == near(-0.0828067737855));

  const Filter dog = cuconv::load_filter("dog:2,1,2");
  REQUIRE(dog.width == 5);
  CHECK(dog.at(2, 2) == near(0.0989113592269));
  CHECK(dog.at(0, 0) == near(-0.0202778231343));
  CHECK(dog.at(0, 2) == near(-0.0163893281042));
  CHECK(sum_of(dog) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(cuconv::load_filter("dog:0,1,2").width == 13);  // R from the larger sigma

  // disk:2: the 13 cells with dx^2 + dy^2 <= 4.
  const Filter disk = cuconv::load_filter("disk:2");
  REQUIRE(disk.width == 5);
  const std::vector<double> expected_disk = scaled({0, 0, 1, 0, 0,  //
                                                    0, 1, 1, 1, 0,  //
                                                    1, 1, 1, 1, 1,  //
                                                    0, 1, 1, 1, 0,  //
                                                    0, 0, 1, 0, 0},
                                                   13);
  CHECK(disk.weights == expected_disk);

  const Filter horizontal = cuconv::load_filter("motion:5,0");
  REQUIRE(horizontal.width == 5);
  for (int col = 0; col < 5; ++col) CHECK(horizontal.at(2, col) == 0.2);
  CHECK(sum_of(horizontal) == doctest::Approx(1.0));
  const Filter vertical = cuconv::load_filter("motion:4,90");  // even LENGTH: rounded up to 5
  REQUIRE(vertical.width == 5);
  for (int row = 0; row < 5; ++row) CHECK(vertical.at(row, 2) == 0.2);
  // 45 degrees, counter-clockwise with y up: bottom-left to top-right; cells within (7-1)/2 = 3
  // along the line and half a pixel across it.
  const Filter diagonal = cuconv::load_filter("motion:7,45");
  REQUIRE(diagonal.width == 7);
  for (int row = 0; row < 7; ++row) {
    for (int col = 0; col < 7; ++col) {
      const bool on_line = row + col == 6 && std::abs(col - 3) <= 2;
      CAPTURE(row);
      CAPTURE(col);
      CHECK(diagonal.at(row, col) == (on_line ? 0.2 : 0.0));
    }
  }

  auto load = [](const char* spec) { return [spec] { return cuconv::load_filter(spec); }; };
  check_error(load("unsharp:1,1"), {"filter 'unsharp:1,1'", "expected unsharp:R,SIGMA,AMOUNT"});
  check_error(load("unsharp:1,1,-1"), {"AMOUNT must be 0 or more"});
  check_error(load("log:1,0"), {"SIGMA must be greater than 0"});
  check_error(load("dog:1,1,0"), {"SIGMA2 must be greater than 0"});
  check_error(load("disk:0"), {"R must be an integer from 1 to 63"});
  check_error(load("disk:64"), {"R must be an integer from 1 to 63"});
  check_error(load("motion:0,0"), {"LENGTH must be an integer from 1 to 127"});
  check_error(load("motion:5,east"), {"'east' is not a number"});
  check_error(load("log:2,1e-200"), {"filter 'log:2,1e-200'", "not all finite"});
}

TEST_CASE("every parametric kind is listed once and loads from its own syntax") {
  std::vector<std::string> seen;
  for (const cuconv::ParametricFilter& kind : cuconv::parametric_filters()) {
    CAPTURE(kind.syntax);
    CHECK(std::string_view(kind.syntax).starts_with(std::string(kind.name) + ":"));
    CHECK_FALSE(kind.summary.empty());
    CHECK(std::find(seen.begin(), seen.end(), kind.name) == seen.end());
    seen.emplace_back(kind.name);
  }
  CHECK(seen == std::vector<std::string>{"box", "gaussian", "unsharp", "log", "dog", "disk", "motion"});
}

// ---- load_filter: resolution order, files ------------------------------------------------------

TEST_CASE("load_filter reads inline strings") {
  const Filter f = cuconv::load_filter("1x3+0+2:1,2,3");
  CHECK(f.height == 3);
  CHECK(f.anchor_y == 2);
  CHECK(f.weights == std::vector<double>{1, 2, 3});
  check_error([] { return cuconv::load_filter("2x2:1,2,3"); },
              {"inline filter '2x2:1,2,3':", "expected 4 values"});
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
  check_error([&] { return cuconv::load_filter(broken); },
              {broken + ":3:", "row has 1 values, expected 2"});
  const std::string broken_mat = dir.write("broken.mat", "# c\n2 2 0\n1 1\n1 1\n");
  check_error([&] { return cuconv::load_filter(broken_mat); },
              {broken_mat + ":2:", "scale must not be 0"});
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
  check_error([] { return cuconv::load_filter("gauss9"); },
              {"filter 'gauss9' is not a preset", "did you mean 'gauss3', 'gauss5' or 'gauss7'?",
               "(see `preset_names`)"});
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
  check_error([] { return cuconv::load_filter("blur"); }, {"filter 'blur' is not a preset", "did you mean 'gauss5' or 'box:N'?"});
  check_error([] { return cuconv::load_filter("MEAN"); }, {"did you mean 'box:N'?"});
  // A border's word is no filter: no suggestion from the border list.
  CHECK(error_of([] { return cuconv::load_filter("mirror"); }).find("reflect") == std::string::npos);
}
