// SPDX-License-Identifier: Apache-2.0
// The encoder options: --quality and --compression change sizes never pixels, reach both modes'
// requests, and apply in a mixed batch to the outputs whose format takes them.
#include "formats_support.hpp"
#include "test_support.hpp"

#include "cli/command_line.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

using namespace cuconv;
using namespace cuconv::test;
namespace fs = std::filesystem;

TEST_CASE("--quality: JPEG defaults to 95, lower is smaller, WebP is lossless unless asked") {
  TempDir dir;
  const auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {sample("coffee.png"), dir.file(out), "--filter", "1x1:1", "--variant", "opencv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_cuconv(args);
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    return read_file(dir.file(out));
  };
  const std::string plain = run("plain.jpg", {});
  CHECK(plain == run("q95.jpg", {"--quality", "95"}));
  CHECK(run("q20.jpg", {"--quality", "20"}).size() * 2 < plain.size());
  run("lossless.webp", {});
  CHECK(same_bytes(cv::imread(dir.file("lossless.webp"), cv::IMREAD_UNCHANGED),
                   cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED)));
  const std::string lossy = run("q50.webp", {"--quality", "50"});
  CHECK(lossy.size() * 2 < read_file(dir.file("lossless.webp")).size());
}

TEST_CASE("--compression: PNG levels and TIFF codecs change the size, never the pixels") {
  TempDir dir;
  const cv::Mat input = cv::imread(sample("astronaut.png"), cv::IMREAD_UNCHANGED);
  std::map<std::string, std::uintmax_t> sizes;
  for (const auto& [out_name, level] : std::vector<std::pair<std::string, std::string>>{
           {"l0.png", "0"}, {"l9.png", "9"}, {"none.tif", "none"}, {"lzw.tif", "lzw"}, {"deflate.tif", "deflate"}}) {
    const std::string out = out_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
    const auto result = run_cuconv({sample("astronaut.png"), dir.file(out), "--filter", "1x1:1", "--variant", "opencv",
                                    "--compression", level, "--strip"});
    INFO(out, ": ", result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(same_bytes(cv::imread(dir.file(out), cv::IMREAD_UNCHANGED), input));
    sizes[out] = fs::file_size(dir.file(out));
  }
  CHECK(sizes["l9.png"] < sizes["l0.png"]);
  CHECK(sizes["lzw.tif"] < sizes["none.tif"]);
  CHECK(sizes["deflate.tif"] < sizes["none.tif"]);
}

TEST_CASE("batch: --quality and --compression apply to the outputs whose format takes them, said once for the others") {
  // Before issue 49 `--quality 30` on a folder of JPEG, PNG and TIFF files refused the whole batch
  // (exit 2) because of its PNG.
  TempDir dir;
  fs::create_directories(dir.file("in"));
  const cv::Mat camera = cv::imread(sample("camera.png"), cv::IMREAD_UNCHANGED);
  const cv::Mat coffee = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
  REQUIRE(cv::imwrite(dir.file("in/a.png"), camera));
  REQUIRE(cv::imwrite(dir.file("in/b.jpg"), coffee));
  REQUIRE(cv::imwrite(dir.file("in/c.tif"), camera));
  const auto batch = [&](const std::string& out, std::vector<std::string> options) {
    std::vector<std::string> args{"--out-dir", dir.file(out), dir.file("in"), "--filter",
                                  "gauss5",    "--variant",   "opencv"};
    args.insert(args.end(), options.begin(), options.end());
    return run_cuconv(args);
  };
  const auto plain = batch("plain", {});
  REQUIRE(plain.exit_code == 0);
  const auto asked = batch("asked", {"--quality", "30", "--compression", "lzw"});
  INFO(asked.err);
  REQUIRE(asked.exit_code == 0);
  const std::string quality_note =
      "--quality 30 applies to JPEG and WebP outputs; 2 of 3 output(s) are written without it";
  const std::string compression_note =
      "--compression lzw applies to TIFF outputs; 2 of 3 output(s) are written without it";
  for (const std::string& note : {quality_note, compression_note}) {
    const std::size_t at = asked.err.find(note);
    CHECK(at != std::string::npos);
    CHECK(asked.err.find(note, at + 1) == std::string::npos);  // once, not once per output
  }
  CHECK(asked.err.find(dir.file("asked/a.png")) != std::string::npos);  // the note names them
  // The JPEG took the quality (far smaller than at the default 95), the TIFF the codec (another size
  // than the default deflate, the same pixels), the PNG neither (byte for byte the plain run's).
  CHECK(fs::file_size(dir.file("asked/b.jpg")) * 2 < fs::file_size(dir.file("plain/b.jpg")));
  CHECK(fs::file_size(dir.file("asked/c.tif")) != fs::file_size(dir.file("plain/c.tif")));
  CHECK(same_bytes(cv::imread(dir.file("asked/c.tif"), cv::IMREAD_UNCHANGED),
                   cv::imread(dir.file("plain/c.tif"), cv::IMREAD_UNCHANGED)));
  CHECK(read_file(dir.file("asked/a.png")) == read_file(dir.file("plain/a.png")));
  // A batch whose outputs all take the option says nothing about it.
  const auto only_png = run_cuconv({"--out-dir", dir.file("png"), dir.file("in/a.png"), "--filter", "gauss5",
                                    "--variant", "opencv", "--compression", "9"});
  CHECK(only_png.exit_code == 0);
  CHECK(only_png.err.find("written without it") == std::string::npos);
}

TEST_CASE("command line: --quality, --compression, --strip and --auto-orient reach both modes' requests") {
  const char* single[] = {"cuconv", "in.png", "out.jpg", "-f", "gauss5", "--quality", "80", "--strip", "--auto-orient"};
  const cli::ParsedCommand one = cli::parse_command_line(static_cast<int>(std::size(single)), single);
  REQUIRE(one.action == cli::Action::filter_image);
  CHECK(one.request.quality == 80);
  CHECK(one.request.compression.empty());
  CHECK(one.request.strip_metadata);
  CHECK(one.request.auto_orient);
  CHECK(cli::write_options_of(one.request).quality == 80);

  const char* batch[] = {"cuconv", "--out-dir",     "out",     "in",           "-f",
                         "gauss5", "--compression", "deflate", "--auto-orient"};
  const cli::ParsedCommand many = cli::parse_command_line(static_cast<int>(std::size(batch)), batch);
  REQUIRE(many.action == cli::Action::filter_batch);
  CHECK_FALSE(many.batch.write.quality.has_value());
  CHECK(many.batch.write.compression == "deflate");
  CHECK_FALSE(many.batch.strip_metadata);
  CHECK(many.batch.auto_orient);
}

TEST_CASE("encoder_options_for: each output format keeps the options it takes (a mixed batch)") {
  // Before issue 49 a batch's --quality 90 refused every PNG in it; the engine now writes each
  // file with the options of its own format.
  WriteOptions asked;
  asked.quality = 90;
  asked.compression = "9";
  const WriteOptions png = encoder_options_for("a.png", asked);
  CHECK_FALSE(png.quality.has_value());
  CHECK(png.compression == "9");
  CHECK_NOTHROW(check_encoder_options("a.png", png));
  const WriteOptions jpeg = encoder_options_for("a.JPG", asked);
  CHECK(jpeg.quality == 90);
  CHECK(jpeg.compression.empty());
  CHECK_NOTHROW(check_encoder_options("a.jpg", jpeg));
  const WriteOptions tiff = encoder_options_for("a.tif", asked);  // a level is no TIFF codec
  CHECK_FALSE(tiff.quality.has_value());
  CHECK(tiff.compression.empty());
  asked.compression = "lzw";
  CHECK(encoder_options_for("a.tif", asked).compression == "lzw");
  CHECK(encoder_options_for("a.png", asked).compression.empty());
  CHECK(encoder_options_for("a.webp", asked).quality == 90);
  CHECK(encoder_options_for("a.bmp", asked).compression.empty());
}
