// Bad inputs through the real binary: each is refused with the bad-input exit code, a message
// naming the file and the reason, and no output file.
#include "test_support.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <fstream>
#include <zlib.h>

using cuconv::ExitCode;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

void expect_bad_input(const std::string& input, const std::vector<std::string>& words, const TempDir& dir) {
  const std::string out = dir.file("out.png");
  const auto r = run_cuconv({input, out, "--filter", "gauss5", "--variant", "opencv"});
  INFO(input, "\nstderr: ", r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find(input) != std::string::npos);
  for (const auto& w : words) CHECK_MESSAGE(r.err.find(w) != std::string::npos, "missing '", w, "'");
  CHECK_FALSE(std::filesystem::exists(out));
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

/// A PNG chunk with a correct CRC.
std::string png_chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const auto crc = static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
  return be32(static_cast<std::uint32_t>(data.size())) + body + be32(crc);
}

}  // namespace

TEST_CASE("bad input: corrupt PNG data (bad CRC) is refused") {
  TempDir dir;
  std::string png = cuconv::test::read_file(sample("camera.png"));
  const auto idat = png.find("IDAT");
  REQUIRE(idat != std::string::npos);
  png[idat + 40] = static_cast<char>(png[idat + 40] ^ 0x5A);  // inside the compressed data: CRC now wrong
  write_bytes(dir.file("badcrc.png"), png);
  expect_bad_input(dir.file("badcrc.png"), {"cannot decode"}, dir);
}

TEST_CASE("bad input: a PNG header claiming 100000 x 100000 pixels is refused before decoding") {
  TempDir dir;
  const std::string ihdr = be32(100000) + be32(100000) + std::string("\x08\x00\x00\x00\x00", 5);
  write_bytes(dir.file("huge.png"), std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) + png_chunk("IEND", ""));
  expect_bad_input(dir.file("huge.png"), {"cannot decode"}, dir);
}

TEST_CASE("bad input: unsupported depths (64F, 16S)") {
  TempDir dir;
  cv::Mat f64(8, 8, CV_64F, cv::Scalar(0.5));
  REQUIRE(cv::imwrite(dir.file("f64.tif"), f64));
  expect_bad_input(dir.file("f64.tif"), {"unsupported pixel depth 64F"}, dir);
  cv::Mat s16(8, 8, CV_16S, cv::Scalar(-5));
  REQUIRE(cv::imwrite(dir.file("s16.tif"), s16));
  expect_bad_input(dir.file("s16.tif"), {"unsupported pixel depth 16S"}, dir);
}

TEST_CASE("bad input: files that are not images") {
  TempDir dir;
  write_bytes(dir.file("random.png"), std::string("\x00\x01\x02\xff\xfe garbage \x7f", 16));
  expect_bad_input(dir.file("random.png"), {"cannot decode"}, dir);
  write_bytes(dir.file("script.jpg"), "#!/bin/sh\necho not an image\n");
  expect_bad_input(dir.file("script.jpg"), {"cannot decode"}, dir);
  const std::string png = cuconv::test::read_file(sample("camera.png"));
  write_bytes(dir.file("header_only.png"), png.substr(0, 33));  // signature + IHDR, no data
  expect_bad_input(dir.file("header_only.png"), {"cannot decode"}, dir);
}

TEST_CASE("bad filter sources: directory, empty file, binary file") {
  TempDir dir;
  const std::string out = dir.file("out.png");
  std::filesystem::create_directory(dir.file("filters.d"));
  write_bytes(dir.file("empty.txt"), "");
  write_bytes(dir.file("comments.txt"), "# nothing but a comment\n\n");
  for (const auto& [spec, words] : std::vector<std::pair<std::string, std::string>>{
           {dir.file("filters.d"), "directory"},
           {dir.file("empty.txt"), "no filter values"},
           {dir.file("comments.txt"), "no filter values"},
           {sample("camera.png"), "not a number"}}) {
    const auto r = run_cuconv({sample("camera.png"), out, "--filter", spec});
    INFO(spec, "\nstderr: ", r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
    CHECK(r.err.find(words) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
  }
}
