// SPDX-License-Identifier: Apache-2.0
// `cuconv IMG OUT --filter F --variant V --border B` through the real binary, for every GPU
// variant and border, on real 8U gray/RGB/RGBA, 16U and 32F images, including 31x31 and
// non-square filters; the written file is checked against cv::filter2D under the pass rule.
// Also --compare's report and exit status.
#include "adversarial_files.hpp"
#include "test_support.hpp"
#include "verbose_account.hpp"

#include "cli/session.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>

using namespace cuconv;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

TEST_CASE("gpu cli: every variant x border x image type matches cv::filter2D") {
  TempDir dir;
  struct Input {
    const char* name;
    const char* out_ext;
  };
  const Input inputs[] = {{"camera.png", ".png"},
                          {"coffee.png", ".png"},
                          {"logo.png", ".png"},
                          {"chessboard_GRAY_U16.tif", ".tif"},
                          {"camera_f32.tif", ".tif"}};
  const char* filters[] = {"gauss5", "box:31", "1x7+0+3:1,-2,3,-4,3,-2,1",
                           "4x2+3+1:0.5,0.25,-1,0.125,1,0.5,-0.25,0.75"};
  // CUCONV_TEST_VARIANTS splits the case over processes side by side (scripts/gpu-check.sh).
  for (Variant variant : cuconv::test::tested_gpu_variants()) {
    for (Border border : {Border::reflect101, Border::reflect, Border::replicate, Border::constant, Border::wrap}) {
      for (const Input& in : inputs) {
        for (const char* spec : filters) {
          const std::string out = dir.file(std::string("out") + in.out_ext);
          std::vector<std::string> args{sample(in.name), out,
                                        "--filter",      spec,
                                        "--variant",     std::string(to_string(variant)),
                                        "--border",      std::string(to_string(border)),
                                        "--overwrite"};
          if (border == Border::constant) args.insert(args.end(), {"--border-value", "100"});
          const auto r = run_cuconv(args);
          INFO(std::string(to_string(variant)), " ", std::string(to_string(border)), " ", std::string(in.name), " ",
               std::string(spec), " stderr: ", r.err);
          REQUIRE(r.exit_code == 0);
          const cv::Mat src = cv::imread(sample(in.name), cv::IMREAD_UNCHANGED);
          ConvolveOptions o;
          o.border = border;
          o.border_value = border == Border::constant ? 100 : 0;
          const Filter f = load_filter(spec);
          const ComparisonStats s =
              cuconv::test::compare_with_filter2d(cv::imread(out, cv::IMREAD_UNCHANGED), src, f, o, variant);
          INFO("max diff ", s.max_abs_difference, " differing ", s.differing_values, " rel ", s.relative_error);
          CHECK(s.within_tolerance);
        }
      }
    }
  }
}

TEST_CASE("gpu cli: --compare reports the difference and timing, --json is one object") {
  TempDir dir;
  const std::string out = dir.file("c.png");
  auto r = run_cuconv({sample("coffee.png"), out, "--filter", "gauss5", "--variant", "tiled", "--compare"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("max abs difference") != std::string::npos);
  CHECK(r.out.find("speedup") != std::string::npos);
  CHECK(std::filesystem::exists(out));

  r = run_cuconv(
      {sample("coffee.png"), dir.file("j.png"), "--filter", "box:31", "--variant", "cached", "--compare", "--json"});
  CHECK(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.at("variant") == "cached");
  CHECK(report.at("within_tolerance") == true);
  CHECK(report.at("max_abs_difference").get<double>() <= 1.0);
  CHECK(report.at("total_values").get<std::size_t>() == 600u * 400u * 3u);
  CHECK(report.at("opencv_ms").get<double>() > 0);
  CHECK(report.at("kernel_ms").get<double>() > 0);
  CHECK(report.at("decoder") == "opencv");  // a PNG, read and written by OpenCV
  CHECK(report.at("encoder") == "opencv");
  CHECK(report.at("served").is_boolean());  // false here; true where a suite runs it through a server
}

TEST_CASE("gpu cli: explicit variants run on the GPU and -v shows event-timed stages") {
  TempDir dir;
  for (Variant variant : gpu_variants()) {
    const auto r = run_cuconv({sample("astronaut.png"), dir.file("a.png"), "--filter", "gauss7", "--variant",
                               std::string(to_string(variant)), "-v", "--overwrite"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("variant " + std::string(to_string(variant))) != std::string::npos);
  }
}

TEST_CASE("gpu cli: --bench N prints the kernel's median time, GB/s and % of the copy roof, output still right") {
  TempDir dir;
  for (const char* variant : {"fast", "tiled-halo", "fft"}) {
    const std::string out = dir.file(std::string(variant) + ".png");
    const auto r = run_cuconv({sample("coffee.png"), out, "--filter", "gauss7", "--variant", variant, "--bench", "7"});
    INFO(variant, r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("kernel median") != std::string::npos);
    CHECK(r.out.find("over 7 runs") != std::string::npos);
    CHECK(r.out.find("GB/s") != std::string::npos);
    CHECK(r.out.find("% of a device-to-device copy") != std::string::npos);
    // The roof copy runs before the timed kernels, so the written image is the filtered one.
    const cv::Mat src = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
    ConvolveOptions o;
    o.variant = Variant::opencv;
    o.opencv_method = OpenCvMethod::reference;
    const Filter f = load_filter("gauss7");
    const ComparisonStats s =
        compare_to_reference(cv::imread(out, cv::IMREAD_UNCHANGED), convolve(src, f, o).image, src, f,
                             ConvolveOptions{}, std::string(variant) == "fft" ? Variant::fft : Variant::fast);
    CHECK(s.within_tolerance);
  }
}

TEST_CASE("gpu cli: --compare outside the tolerance exits 6 and writes nothing") {
  TempDir dir;
  const std::string out = dir.file("bad.png");
  // The command runs in-process in a session whose test seam adds 3 to every result value
  // before the comparison; its standard output and error go to files.
  const std::string out_text = dir.file("stdout.txt");
  const std::string err_text = dir.file("stderr.txt");
  const int out_fd = ::open(out_text.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err_text.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(out_fd >= 0);
  REQUIRE(err_fd >= 0);
  int exit_code = 0;
  {
    cli::Session session;
    session.out_fd = out_fd;
    session.err_fd = err_fd;
    session.before_compare = [](ConvolveResult& result) { cv::add(result.image, cv::Scalar::all(3), result.image); };
    exit_code = cli::run_command(
        {"cuconv", sample("camera.png"), out, "--filter", "gauss5", "--variant", "fast", "--compare", "--json"},
        session);
  }
  ::close(out_fd);
  ::close(err_fd);
  const std::string stdout_text = cuconv::test::read_file(out_text);
  const std::string stderr_text = cuconv::test::read_file(err_text);
  INFO(stderr_text);
  CHECK(exit_code == 6);
  const auto report = nlohmann::json::parse(stdout_text);
  CHECK(report.at("within_tolerance") == false);
  // 3 from the corruption, plus the at most 1 a correct result may differ by
  CHECK(report.at("max_abs_difference").get<double>() >= 3.0);
  CHECK(report.at("max_abs_difference").get<double>() <= 4.0);
  CHECK(stderr_text.find("beyond the tolerance") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("gpu cli: --compare's check fails a GPU result outside the tolerance") {
  // --compare runs check_against_reference on the GPU result and exits 6 without writing when it
  // fails; a correct kernel never leaves the tolerance, so the result is spoiled here by 3.
  const cv::Mat src = cv::imread(sample("camera.png"), cv::IMREAD_UNCHANGED);
  REQUIRE(!src.empty());
  const Filter f = load_filter("gauss5");
  ConvolveOptions o;
  o.variant = Variant::fast;
  ConvolveResult r = convolve(src, f, o);
  REQUIRE(r.variant_used == Variant::fast);
  CHECK(check_against_reference(src, f, o, r.image, r.variant_used).stats.within_tolerance);
  cv::add(r.image, cv::Scalar::all(3), r.image);
  const ReferenceCheck spoiled = check_against_reference(src, f, o, r.image, r.variant_used);
  CHECK_FALSE(spoiled.stats.within_tolerance);
  // 3 from the spoiling, plus the at most 1 a correct result may differ by
  CHECK(spoiled.stats.max_abs_difference >= 3.0);
  CHECK(spoiled.stats.max_abs_difference <= 4.0);
}

TEST_CASE(
    "gpu serve: a served JPEG takes the warm nvJPEG pipeline and equals --codec gpu in-process, a PNG equals "
    "in-process bytes") {
  TempDir dir;
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE(cv::imwrite(dir.file("in.jpg"), photo, {cv::IMWRITE_JPEG_QUALITY, 90}));
  // In-process first: the GPU codec of a process of its own.
  const auto own =
      run_cuconv({"--server", "never", dir.file("in.jpg"), dir.file("own.jpg"), "-f", "gauss5", "--codec", "gpu"});
  REQUIRE(own.exit_code == 0);

  const cuconv::test::Server server(dir);
  const auto served = run_cuconv(
      {"--server", "always", dir.file("in.jpg"), dir.file("served.jpg"), "-f", "gauss5", "-v"}, "", server.setup());
  REQUIRE(served.exit_code == 0);
  CHECK(served.err.find("decoder nvjpeg") != std::string::npos);  // --codec auto took the warm codec
  CHECK(served.err.find("encoder nvjpeg") != std::string::npos);
  CHECK(cuconv::test::read_file(dir.file("served.jpg")) == cuconv::test::read_file(dir.file("own.jpg")));

  // Sixteen at once share the pipeline's batches; each output is the same bytes.
  std::string many;
  for (int i = 0; i < 16; ++i)
    many += "cuconv --server always " + dir.file("in.jpg") + " " + dir.file("m" + std::to_string(i) + ".jpg") +
            " -f gauss5 & ";
  const auto all = run_cuconv(
      {"--version"}, "",
      server.setup() + "; export PATH=" + std::filesystem::path(cuconv::test::cuconv_binary()).parent_path().string() +
          ":$PATH; " + many + "wait");
  REQUIRE(all.exit_code == 0);
  for (int i = 0; i < 16; ++i)
    CHECK(cuconv::test::read_file(dir.file("m" + std::to_string(i) + ".jpg")) ==
          cuconv::test::read_file(dir.file("own.jpg")));

  // A served batch hands its JPEGs to the same warm pipeline (no pipeline of its own: its summary
  // counts no decode call of its own); each output is the same bytes.
  std::filesystem::create_directories(dir.file("batch-in"));
  for (int i = 0; i < 6; ++i)
    std::filesystem::copy_file(dir.file("in.jpg"), dir.file("batch-in/b" + std::to_string(i) + ".jpg"));
  const auto batch = run_cuconv({"--server", "always", "--out-dir", dir.file("batch-out"), dir.file("batch-in"), "-f",
                                 "gauss5", "--codec", "gpu", "--json", dir.file("batch.json")},
                                "", server.setup());
  REQUIRE_MESSAGE(batch.exit_code == 0, batch.err);
  const nlohmann::json summary = nlohmann::json::parse(cuconv::test::read_file(dir.file("batch.json")));
  CHECK(summary["totals"]["ok"] == 6);
  CHECK(summary["totals"]["gpu_codec"]["batches"] == 0);
  for (const auto& file : summary["files"]) {
    CHECK(file["decoder"].get<std::string>().starts_with("nvjpeg"));
    CHECK(file["encoder"] == "nvjpeg");
    CHECK(cuconv::test::read_file(file["output"].get<std::string>()) == cuconv::test::read_file(dir.file("own.jpg")));
  }

  // A PNG through the host route on the server's device: the same bytes as in-process with the same variant.
  const auto png_own = run_cuconv(
      {"--server", "never", sample("coffee.png"), dir.file("own.png"), "-f", "gauss7", "--variant", "tiled"});
  const auto png_served = run_cuconv(
      {"--server", "always", sample("coffee.png"), dir.file("served.png"), "-f", "gauss7", "--variant", "tiled"}, "",
      server.setup());
  REQUIRE(png_own.exit_code == 0);
  REQUIRE(png_served.exit_code == 0);
  CHECK(cuconv::test::read_file(dir.file("served.png")) == cuconv::test::read_file(dir.file("own.png")));
  // The host route keeps its workspace between commands. Its count of device allocations is the
  // workspace's own, so a larger image adds to it, and the first image again adds nothing; a
  // workspace made afresh per command would show each image's own count instead.
  cv::Mat larger;
  cv::resize(cv::imread(sample("coffee.png"), cv::IMREAD_COLOR), larger, {}, 2.0, 2.0);
  REQUIRE(cv::imwrite(dir.file("larger.png"), larger));
  const auto allocations = [&](const std::string& in, const std::string& out) {
    const auto r = run_cuconv({"--server", "always", in, dir.file(out), "-f", "gauss7", "--variant", "tiled", "-v"}, "",
                              server.setup());
    REQUIRE(r.exit_code == 0);
    const std::string key = "its kept workspace has made ";
    const std::size_t at = r.err.find(key);
    REQUIRE_MESSAGE(at != std::string::npos, r.err);
    return std::stoi(r.err.substr(at + key.size()));
  };
  const int small = allocations(sample("coffee.png"), "again1.png");
  const int grown = allocations(dir.file("larger.png"), "larger-out.png");
  CHECK(small > 0);
  CHECK(grown > small);
  CHECK(allocations(sample("coffee.png"), "again2.png") == grown);
  CHECK(cuconv::test::read_file(dir.file("again2.png")) == cuconv::test::read_file(dir.file("own.png")));
  const std::string log = cuconv::test::read_file(dir.file("server.log"));
  CHECK(log.find("GPU ready") != std::string::npos);
  CHECK(log.find("GPU codecs: nvjpeg, warm") != std::string::npos);
}

TEST_CASE("gpu cli: --codec gpu refuses a TIFF named .jpg with a short strip, as libtiff refuses the file") {
  // nvJPEG cannot decode it (no JPEG stream), so the pipeline's host route does: read_image's
  // reader for TIFF, libtiff, from the bytes in memory (cv::imdecode filtered it as if whole).
  TempDir dir;
  std::string tiff = cuconv::test::crafted::tiff_with_samples(37, 29, 1);
  cuconv::test::crafted::patch_tiff_entry(tiff, 279, 0, 10);  // StripByteCounts 10 of 1073
  std::ofstream(dir.file("in.jpg"), std::ios::binary) << tiff;
  const auto r = run_cuconv({dir.file("in.jpg"), dir.file("out.jpg"), "--codec", "gpu", "-f", "box3"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("StripByteCounts") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.jpg")));
}

TEST_CASE("gpu cli: -v accounts for a --codec gpu image's time, the GPU codec's set-up and shut-down named") {
  // A process's own GPU codec pipeline sets up the CUDA context and nvJPEG's handle and states
  // (0.5-1 s); on an H100 at 2ed7620 -v left 940 ms of 1,177 unaccounted.
  TempDir dir;
  const cv::Mat photo = cv::imread(sample("astronaut.png"), cv::IMREAD_COLOR);
  REQUIRE(cv::imwrite(dir.file("in.jpg"), photo, {cv::IMWRITE_JPEG_QUALITY, 90}));
  const auto r = run_cuconv(
      {"--server", "never", dir.file("in.jpg"), dir.file("out.jpg"), "-f", "gauss5", "--codec", "gpu", "-v"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.err.find("decoder nvjpeg") != std::string::npos);
  const std::optional<cuconv::test::VerboseAccount> account = cuconv::test::verbose_account(r.err);
  REQUIRE(account.has_value());
  double sum = 0;
  bool setup = false;
  for (const auto& [name, ms] : account->parts) {
    sum += ms;
    setup = setup || (name == "GPU codec set-up" && ms > 0);
  }
  CHECK(setup);
  CHECK(std::abs(sum + account->unaccounted_ms - account->total_ms) <= 0.05 * (account->parts.size() + 2));
  CHECK(std::abs(account->unaccounted_ms) <= std::max(15.0, 0.15 * account->total_ms));
}
