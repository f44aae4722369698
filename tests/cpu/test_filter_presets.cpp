// SPDX-License-Identifier: Apache-2.0
// The presets and parametric filters: their names, exact weights and agreement with OpenCV and libvips.
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
using cuconv::test::filters::TempDir;

namespace {

double sum_of(const Filter& filter) { return std::accumulate(filter.weights.begin(), filter.weights.end(), 0.0); }

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

}  // namespace

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
// reports Skipped where it is not (tests/scripts/libvips_test.sh), so no run passes it without vips.
TEST_CASE("filters/*.mat load in libvips (vips matrixload) with the same weights" * doctest::skip()) {
  REQUIRE_MESSAGE(std::system("vips --version > /dev/null 2>&1") == 0,
                  "the vips command is not installed (Debian: apt-get install libvips-tools)");
  const TempDir dir;
  for (const std::string& name : cuconv::preset_names()) {
    CAPTURE(name);
    const std::string source = (std::filesystem::path(CUCONV_TEST_FILTERS) / (name + ".mat")).string();
    const std::string copy = (dir.path() / (name + "-vips.mat")).string();
    // matrixload, then matrixsave: libvips writes the matrix it read, scale and offset included.
    std::string command = "vips matrixload '";
    command += source;
    command += "' '";
    command += copy;
    command += "' 2>&1";
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
  const std::vector<std::string> expected = {"box3",    "box5",    "edge",      "emboss",   "gauss3",
                                             "gauss5",  "gauss7",  "laplacian", "scharr-x", "scharr-y",
                                             "sharpen", "sobel-x", "sobel-y"};
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
    check_error([bad] { return cuconv::load_filter(bad); }, {std::string("filter '") + bad + "'", "from 1 to 127"});
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
  for (const auto& [radius_spec, side] : {std::pair{"gaussian:0,1", 7}, std::pair{"gaussian:0,1.5", 11},
                                          std::pair{"gaussian:0,0.3", 3}, std::pair{"gaussian:0,2", 13}}) {
    const char* const spec = radius_spec;  // a plain local: clang-tidy 14 cannot see bindings in CAPTURE's lambda
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
  CHECK(sum_of(unsharp) == doctest::Approx(1.0));               // flat areas unchanged
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
