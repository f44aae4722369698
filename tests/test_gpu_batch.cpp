// SPDX-License-Identifier: Apache-2.0
// Batch mode on the GPU: several filter threads per device call convolve() at once, on every
// device (--devices all), with images of mixed type, channel count and size in flight together.
// Every output must still match cv::filter2D under the pass rule.
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <set>

using namespace cuconv;
using cuconv::test::run_cuconv;
using cuconv::test::TempDir;

TEST_CASE("gpu batch: concurrent filtering on all devices matches cv::filter2D for every image") {
  TempDir dir;
  const int depths[] = {CV_8U, CV_16U, CV_32F};
  const int channels[] = {1, 3, 4};
  std::filesystem::create_directories(dir.file("in"));
  std::vector<std::string> names;
  for (int i = 0; i < 18; ++i) {
    const int depth = depths[i % 3];
    // OpenCV 4.6 does not read back the 3-channel float TIFFs it writes: 32F gets 1 or 4 channels.
    const int cn = depth == CV_32F && channels[(i / 3) % 3] == 3 ? 4 : channels[(i / 3) % 3];
    const cv::Mat image = cuconv::test::random_image(37 + 29 * i, 301 - 13 * i, depth, cn, 77 + static_cast<std::uint64_t>(i));
    names.push_back("img" + std::to_string(100 + i) + (depth == CV_32F ? ".tif" : ".png"));
    REQUIRE(cv::imwrite(dir.file("in/" + names.back()), image));
  }
  const int device_count = cuda_device_count();
  REQUIRE(device_count > 0);

  for (const Variant variant : {Variant::constmem, Variant::tiled_halo, Variant::cached}) {
    for (const char* spec : {"gauss5", "1x7+0+3:1,-2,3,-4,3,-2,1"}) {
      const std::string out = dir.file(std::string("out-") + std::string(to_string(variant)) + "-" + std::to_string(spec[0] == 'g'));
      const std::string json = out + ".json";
      const auto r = run_cuconv({"--out-dir", out, "--variant", std::string(to_string(variant)), "--filter", spec,
                                 "--devices", "all", "--jobs", "4", "--json", json, dir.file("in")});
      INFO(std::string(to_string(variant)), " ", spec, " stderr: ", r.err);
      REQUIRE(r.exit_code == 0);
      const auto summary = nlohmann::json::parse(cuconv::test::read_file(json));
      std::set<int> devices_used;
      for (const auto& file : summary["files"]) {
        CHECK(file["status"] == "ok");
        devices_used.insert(file["device"].get<int>());
      }
      CHECK(static_cast<int>(devices_used.size()) == std::min(device_count, 18));
      CHECK(*devices_used.begin() >= 0);
      CHECK(*devices_used.rbegin() < device_count);

      const Filter filter = load_filter(spec);
      for (const std::string& name : names) {
        const cv::Mat src = cv::imread(dir.file("in/" + name), cv::IMREAD_UNCHANGED);
        ConvolveOptions reference;
        reference.variant = Variant::opencv;
        reference.opencv_method = OpenCvMethod::reference;
        const cv::Mat expected = convolve(src, filter, reference).image;
        const ComparisonStats s =
            compare_to_reference(cv::imread(out + "/" + name, cv::IMREAD_UNCHANGED), expected, src, filter,
                                 ConvolveOptions{}, Variant::automatic);
        INFO(name, ": max diff ", s.max_abs_difference, " differing ", s.differing_values, " rel ", s.relative_error);
        CHECK(s.within_tolerance);
      }
    }
  }
}

TEST_CASE("gpu batch: --devices naming a device that does not exist exits 2 before any work") {
  TempDir dir;
  const std::string missing = std::to_string(cuda_device_count());
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--devices", "0," + missing,
                             cuconv::test::sample("camera.png")});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::usage));
  CHECK(r.err.find("no device " + missing) != std::string::npos);
  CHECK((!std::filesystem::exists(dir.file("out")) || std::filesystem::is_empty(dir.file("out"))));
}

TEST_CASE("gpu batch: the JSON summary names the variant each image ran with, and why auto fell back") {
  TempDir dir;
  const std::vector<std::string> args{"--out-dir", dir.file("out"), "--filter", "gauss5", "--json", "-",
                                      cuconv::test::sample("camera.png"), cuconv::test::sample("coffee.png")};
  auto r = run_cuconv(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) {
    CHECK(file["variant"] == "fast");  // auto's choice for a centred 5x5 with the same depth in and out
    CHECK(file["variant_reason"] == "");
  }
  // A GPU failure under auto (a --gpu-memory limit below one strip row): OpenCV filtered the
  // images, and the summary says why.
  auto faulty = args;
  faulty[1] = dir.file("fallback");
  faulty.insert(faulty.end() - 2, {"--gpu-memory", "1K"});
  r = run_cuconv(faulty);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) {
    CHECK(file["variant"] == "opencv");
    CHECK(file["variant_reason"].get<std::string>().find("variant fast failed on the GPU") != std::string::npos);
  }
}
