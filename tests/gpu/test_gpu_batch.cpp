// SPDX-License-Identifier: Apache-2.0
// Batch mode on the GPU: several filter threads per device call convolve() at once, on every
// device (--devices all), with images of mixed type, channel count and size in flight together.
// Every output must still match cv::filter2D under the pass rule. With two or more devices each
// one gets work and the outputs equal a one-device run's; on one device that case says so and
// is skipped (skip.hpp).
#include "skip.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <map>
#include <set>

using namespace cuconv;
using cuconv::test::run_cuconv;
using cuconv::test::TempDir;

namespace {

/// 18 random images of mixed depth (8U, 16U, 32F), channel count and size in `dir`/in; their names.
std::vector<std::string> write_mixed_images(const TempDir& dir) {
  const int depths[] = {CV_8U, CV_16U, CV_32F};
  const int channels[] = {1, 3, 4};
  std::filesystem::create_directories(dir.file("in"));
  std::vector<std::string> names;
  for (int i = 0; i < 18; ++i) {
    const int depth = depths[i % 3];
    // OpenCV 4.6 does not read back the 3-channel float TIFFs it writes: 32F gets 1 or 4 channels.
    const int cn = depth == CV_32F && channels[(i / 3) % 3] == 3 ? 4 : channels[(i / 3) % 3];
    const cv::Mat image =
        cuconv::test::random_image(37 + 29 * i, 301 - 13 * i, depth, cn, 77 + static_cast<std::uint64_t>(i));
    names.push_back("img" + std::to_string(100 + i) + (depth == CV_32F ? ".tif" : ".png"));
    REQUIRE(cv::imwrite(dir.file("in/" + names.back()), image));
  }
  return names;
}

/// The CUDA devices there are, or 0 after the case is skipped, saying why, with fewer than two.
int devices_to_deal_to(const std::string& what) {
  const int device_count = cuda_device_count();
  if (device_count >= 2) return device_count;
  cuconv::test::skip_case(what + " needs two CUDA devices; this machine has " + std::to_string(device_count) +
                          " (run it on a two-GPU machine)");
  return 0;
}

/// A `--devices all` batch's summary against the inputs `names`: every input exactly once, each
/// ok, and every one of the `device_count` devices dealt some (dealt by progress: a faster device
/// takes more, but none stands idle); `one`, the `--devices 0` run's, all on device 0.
void check_dealt(const nlohmann::json& all, const nlohmann::json& one, const std::vector<std::string>& names,
                 int device_count) {
  std::map<std::string, int> seen;
  std::map<int, int> per_device;
  for (const auto& file : all["files"]) {
    CHECK(file["status"] == "ok");
    ++seen[std::filesystem::path(file["input"].get<std::string>()).filename().string()];
    ++per_device[file["device"].get<int>()];
  }
  CHECK(all["files"].size() == names.size());
  for (const std::string& name : names) CHECK_MESSAGE(seen[name] == 1, name);
  CHECK(static_cast<int>(per_device.size()) == device_count);
  for (const auto& entry : per_device) {
    const int device = entry.first;  // not a structured binding: INFO's lambda captures these
    const int count = entry.second;
    INFO("device ", device, ": ", count, " images");
    CHECK(device >= 0);
    CHECK(device < device_count);
    CHECK(count >= 1);
  }
  for (const auto& file : one["files"]) CHECK(file["device"].get<int>() == 0);
}

}  // namespace

TEST_CASE("gpu batch: concurrent filtering on all devices matches cv::filter2D for every image") {
  TempDir dir;
  const std::vector<std::string> names = write_mixed_images(dir);
  const int device_count = cuda_device_count();
  REQUIRE(device_count > 0);

  for (const Variant variant : {Variant::constmem, Variant::tiled_halo, Variant::cached}) {
    for (const char* spec : {"gauss5", "1x7+0+3:1,-2,3,-4,3,-2,1"}) {
      const std::string out =
          dir.file(std::string("out-") + std::string(to_string(variant)) + "-" + std::to_string(spec[0] == 'g'));
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
      // That each device gets work is the two-device case's (below); here: real device indices.
      REQUIRE_FALSE(devices_used.empty());
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
            compare_to_reference(cv::imread((std::filesystem::path(out) / name).string(), cv::IMREAD_UNCHANGED),
                                 expected, src, filter, ConvolveOptions{}, Variant::automatic);
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
  const std::vector<std::string> args{"--out-dir",
                                      dir.file("out"),
                                      "--filter",
                                      "gauss5",
                                      "--json",
                                      "-",
                                      cuconv::test::sample("camera.png"),
                                      cuconv::test::sample("coffee.png")};
  auto r = run_cuconv(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) {
    const std::string name = std::filesystem::path(file["input"].get<std::string>()).filename();
    CHECK(file["variant"] == cuconv::test::auto_choice("gauss5", name));  // this device's row
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
    const std::string name = std::filesystem::path(file["input"].get<std::string>()).filename();
    CHECK(file["variant"] == "opencv");
    CHECK(file["variant_reason"].get<std::string>().find("variant " + cuconv::test::auto_choice("gauss5", name) +
                                                         " failed on the GPU") != std::string::npos);
  }
}

TEST_CASE("gpu batch: with two or more devices each gets work, every file once, outputs equal to one device's") {
  const int device_count = devices_to_deal_to("dealing images to several devices");
  if (device_count == 0) return;
  TempDir dir;
  const std::vector<std::string> names = write_mixed_images(dir);
  // Named variants (auto may choose by device), whose sums run in one fixed order on any device;
  // gauss5 and a one-column filter with an off-centre anchor.
  for (const Variant variant : {Variant::fast, Variant::constmem}) {
    for (const char* spec : {"gauss5", "1x7+0+3:1,-2,3,-4,3,-2,1"}) {
      const std::string tag = std::string(to_string(variant)) + "-" + std::to_string(spec[0] == 'g');
      const auto run = [&](const std::string& devices, const std::string& out) {
        const std::string json = out + ".json";
        const auto r = run_cuconv({"--out-dir", out, "--variant", std::string(to_string(variant)), "--filter", spec,
                                   "--devices", devices, "--jobs", "4", "--json", json, dir.file("in")});
        INFO(tag, " --devices ", devices, " stderr: ", r.err);
        REQUIRE(r.exit_code == 0);
        return nlohmann::json::parse(cuconv::test::read_file(json));
      };
      const std::string all_out = dir.file("all-" + tag);
      const std::string one_out = dir.file("one-" + tag);
      const auto all = run("all", all_out);
      const auto one = run("0", one_out);
      INFO(tag);

      check_dealt(all, one, names, device_count);

      // The same files written, each equal bit for bit to the one-device run's.
      std::size_t written = 0;
      for (const auto& entry : std::filesystem::directory_iterator(all_out)) written += entry.is_regular_file() ? 1 : 0;
      CHECK(written == names.size());
      for (const std::string& name : names) {
        const cv::Mat a = cv::imread((std::filesystem::path(all_out) / name).string(), cv::IMREAD_UNCHANGED);
        const cv::Mat b = cv::imread((std::filesystem::path(one_out) / name).string(), cv::IMREAD_UNCHANGED);
        INFO(name);
        REQUIRE_FALSE(a.empty());
        REQUIRE_FALSE(b.empty());
        CHECK(cuconv::test::bit_equal(a, b));
      }
    }
  }
}

TEST_CASE(
    "gpu batch: the GPU JPEG route on two or more devices: each gets work, every file once, outputs equal to one "
    "device's") {
  const int device_count = devices_to_deal_to("dealing JPEG files to several devices' pipelines");
  if (device_count == 0) return;
  TempDir dir;
  std::filesystem::create_directories(dir.file("in"));
  std::vector<std::string> names;
  for (int i = 0; i < 96; ++i) {  // several decode batches per device
    const cv::Mat image =
        cuconv::test::random_image(160 + 8 * (i % 5), 120 + 8 * (i % 7), CV_8U, 3, 500 + static_cast<std::uint64_t>(i));
    names.push_back("photo" + std::to_string(100 + i) + ".jpg");
    REQUIRE(cv::imwrite(dir.file("in/" + names.back()), image, {cv::IMWRITE_JPEG_QUALITY, 90}));
  }
  const auto run = [&](const std::string& devices, const std::string& out) {
    const std::string json = out + ".json";
    const auto r = run_cuconv({"--out-dir", out, "--codec", "gpu", "--filter", "gauss5", "--devices", devices, "--jobs",
                               "4", "--json", json, dir.file("in")});
    INFO("--devices ", devices, " stderr: ", r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(cuconv::test::read_file(json));
  };
  const auto all = run("all", dir.file("all"));
  const auto one = run("0", dir.file("one"));
  check_dealt(all, one, names, device_count);
  for (const auto& file : all["files"]) CHECK(file["decoder"].get<std::string>().starts_with("nvjpeg"));
  CHECK(all["totals"]["gpu_codec"]["files"] == static_cast<int>(names.size()));
  for (const std::string& name : names) {
    INFO(name);
    CHECK(cuconv::test::read_file(dir.file("all/" + name)) == cuconv::test::read_file(dir.file("one/" + name)));
  }
}
