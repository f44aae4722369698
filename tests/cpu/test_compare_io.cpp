// SPDX-License-Identifier: Apache-2.0
// The comparison rule behind --compare and the exact sum it judges by, and image I/O checks.
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::random_image;
using cuconv::test::sample;
using cuconv::test::TempDir;

TEST_CASE("comparison rule: integer and float tolerances, NaN never passes") {
  const Filter f = load_filter("box3");
  cv::Mat ref = random_image(100, 100, CV_8U, 1, 11);
  cv::Mat res = ref.clone();
  CHECK(compare_to_reference(res, ref, ref, f, 0).within_tolerance);
  res.at<uchar>(5, 5) = cv::saturate_cast<uchar>(ref.at<uchar>(5, 5) + (ref.at<uchar>(5, 5) < 128 ? 1 : -1));
  auto s = compare_to_reference(res, ref, ref, f, 0);
  CHECK(s.differing_values == 1);
  CHECK(s.max_abs_difference == 1);
  CHECK(s.within_tolerance);  // 1 of 10000 values = 0.01%
  res.at<uchar>(6, 6) = cv::saturate_cast<uchar>(ref.at<uchar>(6, 6) + (ref.at<uchar>(6, 6) < 128 ? 2 : -2));
  CHECK_FALSE(compare_to_reference(res, ref, ref, f, 0).within_tolerance);  // off by 2
  res = ref.clone();
  for (int i = 0; i < 11; ++i)
    res.at<uchar>(i, 0) = ref.at<uchar>(i, 0) < 128 ? ref.at<uchar>(i, 0) + 1 : ref.at<uchar>(i, 0) - 1;
  CHECK_FALSE(compare_to_reference(res, ref, ref, f, 0).within_tolerance);  // 0.11% differ

  cv::Mat reff = random_image(50, 50, CV_32F, 1, 12);
  cv::Mat resf = reff.clone();
  resf.at<float>(3, 3) += 100.0f * 9 * 1e-6f;  // relative 1e-6 of sum|k| * max|x| = 9 * ~100
  CHECK(compare_to_reference(resf, reff, reff, f, 0).within_tolerance);
  resf.at<float>(3, 3) += 100.0f * 9 * 1e-4f;
  CHECK_FALSE(compare_to_reference(resf, reff, reff, f, 0).within_tolerance);
  resf = reff.clone();
  resf.at<float>(0, 0) = std::nanf("");
  CHECK_FALSE(compare_to_reference(resf, reff, reff, f, 0).within_tolerance);
}

TEST_CASE("check_against_reference (--compare's check): a correct result passes, one off by 3 fails") {
  const cv::Mat src = cv::imread(sample("camera.png"), cv::IMREAD_UNCHANGED);
  REQUIRE(!src.empty());
  const Filter f = load_filter("gauss5");
  ConvolveOptions options;
  options.variant = Variant::opencv;
  cv::Mat result = convolve(src, f, options).image;
  const ReferenceCheck good = check_against_reference(src, f, options, result, Variant::opencv);
  CHECK(good.stats.within_tolerance);
  CHECK(good.stats.max_abs_difference <= 1.0);
  cv::add(result, cv::Scalar::all(3), result);
  const ReferenceCheck bad = check_against_reference(src, f, options, result, Variant::fast);
  CHECK_FALSE(bad.stats.within_tolerance);
  CHECK(bad.stats.max_abs_difference >= 3.0);
  CHECK(bad.stats.max_abs_difference <= 4.0);
}

TEST_CASE("exact_sum: filter2D in double rounded once, and a 16-bit value equal to it is not counted as a difference") {
  const cv::Mat src = random_image(64, 80, CV_16U, 1, 4242);
  const Filter f = load_filter("gaussian:7,3");
  ConvolveOptions o;
  o.variant = Variant::opencv;
  o.opencv_method = OpenCvMethod::reference;
  const cv::Mat reference = convolve(src, f, o).image;
  o.opencv_method = OpenCvMethod::exact_sum;
  const cv::Mat exact = convolve(src, f, o).image;
  REQUIRE(exact.type() == CV_16UC1);
  // Interior pixels against a sum written out here: double products, rounded half to even.
  for (const cv::Point p : {cv::Point(7, 7), cv::Point(40, 30), cv::Point(72, 56)}) {
    double sum = 0.0;
    for (int i = 0; i < 15; ++i)
      for (int j = 0; j < 15; ++j) sum += f.at(i, j) * src.at<std::uint16_t>(p.y - 7 + i, p.x - 7 + j);
    CHECK(exact.at<std::uint16_t>(p) == static_cast<std::uint16_t>(std::nearbyint(sum)));
  }
  // filter2D's float sums round to another integer somewhere on full-range 16-bit data.
  const int float_off = cv::countNonZero(reference != exact);
  REQUIRE(float_off > 0);
  CHECK(compares_with_exact_sum(CV_16U));
  CHECK_FALSE(compares_with_exact_sum(CV_8U));
  const ComparisonStats plain = compare_to_reference(exact, reference, src, f, 0);
  CHECK(plain.differing_values == static_cast<std::size_t>(float_off));
  const ComparisonStats with_exact =
      compare_to_reference(exact, reference, src, f, 0, 0, kMaxDifferingFraction, &exact);
  CHECK(with_exact.differing_values == 0);
  CHECK(with_exact.exact_where_reference_differs == static_cast<std::size_t>(float_off));
  CHECK(with_exact.within_tolerance);
  // A value that is neither filter2D's nor the exact one still counts.
  cv::Mat wrong = exact.clone();
  wrong.at<std::uint16_t>(20, 20) =
      static_cast<std::uint16_t>(std::max(reference.at<std::uint16_t>(20, 20), exact.at<std::uint16_t>(20, 20)) + 1);
  const ComparisonStats off = compare_to_reference(wrong, reference, src, f, 0, 0, kMaxDifferingFraction, &exact);
  CHECK(off.differing_values == 1);
}

TEST_CASE("read_image: missing, directory, empty and corrupt files name the file") {
  TempDir dir;
  auto expect_bad_input = [](const std::string& path, const std::string& words) {
    try {
      (void)read_image(path);
      FAIL("no exception for ", path);
    } catch (const cuconv::Error& e) {
      CHECK(e.kind() == ErrorKind::bad_input);
      const std::string msg = e.what();
      CHECK(msg.find(path) != std::string::npos);
      CHECK_MESSAGE(msg.find(words) != std::string::npos, msg);
    }
  };
  expect_bad_input(dir.file("missing.png"), "no such file");
  expect_bad_input(dir.path().string(), "directory");
  { std::ofstream(dir.file("empty.png")); }
  expect_bad_input(dir.file("empty.png"), "empty");
  {
    std::ofstream out(dir.file("corrupt.png"), std::ios::binary);
    out << "\x89PNG\r\n\x1a\n this is not a png body";
  }
  expect_bad_input(dir.file("corrupt.png"), "cannot decode");
  const cv::Mat u16 = read_image(sample("chessboard_GRAY_U16.tif"));
  CHECK(u16.depth() == CV_16U);
  CHECK(read_image(sample("logo.png")).channels() == 4);
  CHECK(read_image(sample("camera_f32.tif")).depth() == CV_32F);
}

TEST_CASE("output formats that would change the data are refused") {
  CHECK_THROWS_AS(check_output_format("x.png", CV_32F, 1), cuconv::Error);
  CHECK_THROWS_AS(check_output_format("x.jpg", CV_16U, 1), cuconv::Error);
  CHECK_THROWS_AS(check_output_format("x.jpg", CV_8U, 4), cuconv::Error);
  CHECK_THROWS_AS(check_output_format("x.unknownext", CV_8U, 1), cuconv::Error);
  CHECK_NOTHROW(check_output_format("x.png", CV_16U, 4));
  CHECK_NOTHROW(check_output_format("x.TIF", CV_32F, 3));
  try {
    check_output_format("out/x.png", CV_32F, 1);
  } catch (const cuconv::Error& e) {
    CHECK(e.kind() == ErrorKind::output);
    CHECK(std::string(e.what()).find("out/x.png") != std::string::npos);
    CHECK(std::string(e.what()).find("32F") != std::string::npos);
  }
}

TEST_CASE("write_image_atomic writes the image and leaves no temporary file") {
  TempDir dir;
  const cv::Mat img = random_image(13, 17, CV_16U, 3, 5);
  write_image_atomic(dir.file("a.png"), img);
  CHECK(bit_equal(cv::imread(dir.file("a.png"), cv::IMREAD_UNCHANGED), img));
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 1);
  CHECK_THROWS_AS(write_image_atomic(dir.file("no/such/dir/a.png"), img), cuconv::Error);
  CHECK_FALSE(std::filesystem::exists(dir.file("no/such/dir/a.png")));
}

TEST_CASE("output that is the input file is refused, also through a link") {
  TempDir dir;
  const std::string in = dir.file("in.png");
  cv::imwrite(in, random_image(4, 4, CV_8U, 1, 9));
  std::filesystem::create_symlink(in, dir.file("link.png"));
  CHECK_THROWS_AS(check_not_same_file(in, dir.file("link.png")), cuconv::Error);
  CHECK_THROWS_AS(check_not_same_file(in, dir.file("./in.png")), cuconv::Error);
  CHECK_NOTHROW(check_not_same_file(in, dir.file("other.png")));
}
