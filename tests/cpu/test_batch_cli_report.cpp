// SPDX-License-Identifier: Apache-2.0
// `cuconv --out-dir` end to end, what a batch reports: failed inputs and --fail-fast, --max-pixels,
// and the JSON summary's files, totals, variants and filter.
#include "batch_support.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <fstream>
#include <set>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::file_names;
using cuconv::test::gauss5;
using cuconv::test::is_temp_name;
using cuconv::test::read_json;
using cuconv::test::run_cuconv;
using cuconv::test::TempDir;
using cuconv::test::write_random_images;
namespace fs = std::filesystem;

TEST_CASE("cli batch: a corrupt input is reported, the others are written, exit 7 - --fail-fast stops") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 5);
  std::ofstream(dir.file("in/img02.png"), std::ios::binary) << "\x89PNG\r\n\x1a\ntruncated";
  auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", dir.file("in"),
                       "--json", dir.file("s.json")});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::some_inputs_failed));
  CHECK(r.err.find("img02.png") != std::string::npos);
  CHECK(r.err.find("cannot decode") != std::string::npos);
  CHECK(file_names(dir.path() / "out") == std::set<std::string>{"img00.png", "img01.png", "img03.png", "img04.png"});
  CHECK(bit_equal(cv::imread(dir.file("out/img04.png"), cv::IMREAD_UNCHANGED), gauss5(images.at("img04.png"))));
  const auto summary = read_json(dir.file("s.json"));
  CHECK(summary["files"][2]["status"] == "failed");
  CHECK(summary["files"][2]["exit_code"] == static_cast<int>(ExitCode::bad_input));
  CHECK(summary["exit_code"] == static_cast<int>(ExitCode::some_inputs_failed));

  // One decoder: img00, img01, then img02 fails; img03 and img04 are never started.
  r = run_cuconv({"--out-dir", dir.file("ff"), "--fail-fast", "--jobs", "1", "--filter", "gauss5", "--variant",
                  "opencv", dir.file("in"), "--json", dir.file("ff.json")});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("--fail-fast") != std::string::npos);
  const auto names = file_names(dir.path() / "ff");
  CHECK_FALSE(names.contains("img03.png"));
  CHECK_FALSE(names.contains("img04.png"));
  for (const auto& name : names) {
    CHECK_FALSE(is_temp_name(name));
    CHECK(bit_equal(cv::imread(dir.file("ff/" + name), cv::IMREAD_UNCHANGED), gauss5(images.at(name))));
  }
  const auto ff = read_json(dir.file("ff.json"));
  CHECK(ff["files"][4]["status"] == "skipped");
  CHECK(ff["files"][4]["reason"].get<std::string>().find("--fail-fast") != std::string::npos);
}

TEST_CASE("cli batch: --max-pixels applies to every input, as in single-image mode") {
  TempDir dir;
  write_random_images(dir.path() / "in", 3, 48);  // 48x48, 48x49, 48x50 pixels
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", "--max-pixels",
                             "2352", dir.file("in")});  // 48 * 49: the third is too large
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::some_inputs_failed));
  CHECK(r.err.find("img02.png") != std::string::npos);
  CHECK(r.err.find("--max-pixels") != std::string::npos);
  CHECK(file_names(dir.path() / "out") == std::set<std::string>{"img00.png", "img01.png"});
}

TEST_CASE("cli batch: the JSON summary on stdout is valid and complete") {
  TempDir dir;
  write_random_images(dir.path() / "in", 3);
  const auto r = run_cuconv(
      {"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", "--json", "-", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(r.out);
  REQUIRE(summary["files"].size() == 3);
  for (const auto& file : summary["files"]) {
    CHECK(file["status"] == "ok");
    CHECK(file["reason"] == "");
    CHECK(file["exit_code"] == 0);
    CHECK(fs::exists(file["output"].get<std::string>()));
    for (const char* timing : {"read_ms", "filter_ms", "write_ms", "total_ms"})
      CHECK(file["timings"][timing].is_number());
    CHECK(file["timings"]["total_ms"].get<double>() > 0);
  }
  CHECK(summary["totals"]["inputs"] == 3);
  CHECK(summary["totals"]["ok"] == 3);
  CHECK(summary["totals"]["failed"] == 0);
  CHECK(summary["totals"]["wall_ms"].get<double>() > 0);
  CHECK(summary["totals"]["images_per_s"].get<double>() > 0);
  CHECK(summary["totals"]["startup_ms"].get<double>() > 0);
  CHECK(summary["totals"]["gpu_init_ms"] == 0);  // the opencv variant never touches CUDA
  CHECK(summary["gpu_threads"] == 2);
}

TEST_CASE("cli batch: the JSON summary records the variant each image ran with and the full filter spec") {
  TempDir dir;
  write_random_images(dir.path() / "in", 2);
  auto r = run_cuconv({"--out-dir",      dir.file("out"),
                       "--filter",       "gauss5",
                       "--variant",      "opencv",
                       "--border",       "constant",
                       "--border-value", "7",
                       "--delta",        "1.5",
                       "--anchor",       "1,3",
                       "--depth",        "16u",
                       "--alpha",        "keep",
                       "--json",         "-",
                       dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) {
    CHECK(file["variant"] == "opencv");
    CHECK(file["variant_reason"] == "");
  }
  const auto& filter = summary["filter"];
  const Filter gauss5 = load_filter("gauss5");
  CHECK(filter["origin"] == gauss5.origin);
  CHECK(filter["width"] == 5);
  CHECK(filter["height"] == 5);
  CHECK(filter["anchor"] == nlohmann::json::array({1, 3}));
  CHECK(filter["border"] == "constant");
  CHECK(filter["border_value"] == 7.0);
  CHECK(filter["delta"] == 1.5);
  CHECK(filter["offset"] == 0.0);
  CHECK(filter["depth"] == "16u");
  CHECK(filter["alpha"] == "keep");
  REQUIRE(filter["weights"].size() == 5);
  for (int row = 0; row < 5; ++row)
    for (int col = 0; col < 5; ++col) CHECK(filter["weights"][row][col] == gauss5.at(row, col));
  CHECK(summary["variant"] == "opencv");  // as requested

  // `auto`: what really ran, and why it was OpenCV when it was.
  r = run_cuconv({"--out-dir", dir.file("auto"), "--filter", "gauss5", "--json", "-", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  summary = nlohmann::json::parse(r.out);
  CHECK(summary["variant"] == "auto");
  std::string no_gpu_reason;
  const bool gpu = cuda_device_available(&no_gpu_reason);
  for (const auto& file : summary["files"]) {
    if (gpu) {
      CHECK(file["variant"] == "fast");
      CHECK(file["variant_reason"] == "");
    } else {
      CHECK(file["variant"] == "opencv");
      CHECK(file["variant_reason"] == "no usable CUDA device: " + no_gpu_reason);
    }
  }
  // --no-filter runs no variant.
  r = run_cuconv({"--out-dir", dir.file("copy"), "--no-filter", "--json", "-", dir.file("in")});
  REQUIRE(r.exit_code == 0);
  summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) CHECK(file["variant"].is_null());
}

TEST_CASE("cli batch: --gpu-threads sets the filter threads per device") {
  TempDir dir;
  write_random_images(dir.path() / "in", 4);
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", "--gpu-threads",
                             "3", "--json", "-", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["gpu_threads"] == 3);
  CHECK(summary["totals"]["ok"] == 4);
}
