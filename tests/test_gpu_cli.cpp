// `cuconv IMG OUT --filter F --variant V --border B` through the real binary, for every GPU
// variant and border, on real 8U gray/RGB/RGBA, 16U and 32F images, including 31x31 and
// non-square filters; the written file is checked against cv::filter2D under the pass rule.
// Also --compare's report and exit status.
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <stdlib.h>  // setenv
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

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
  const Input inputs[] = {{"camera.png", ".png"}, {"coffee.png", ".png"}, {"logo.png", ".png"},
                          {"chessboard_GRAY_U16.tif", ".tif"}, {"camera_f32.tif", ".tif"}};
  const char* filters[] = {"gauss5", "box:31", "1x7+0+3:1,-2,3,-4,3,-2,1", "4x2+3+1:0.5,0.25,-1,0.125,1,0.5,-0.25,0.75"};
  for (Variant variant : gpu_variants()) {
    for (Border border : {Border::reflect101, Border::reflect, Border::replicate, Border::constant, Border::wrap}) {
      for (const Input& in : inputs) {
        for (const char* spec : filters) {
          const std::string out = dir.file(std::string("out") + in.out_ext);
          std::vector<std::string> args{sample(in.name), out, "--filter", spec, "--variant",
                                        std::string(to_string(variant)), "--border", std::string(to_string(border)),
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
          const ComparisonStats s = cuconv::test::compare_with_filter2d(cv::imread(out, cv::IMREAD_UNCHANGED), src, f, o, variant);
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

  r = run_cuconv({sample("coffee.png"), dir.file("j.png"), "--filter", "box:31", "--variant", "cached", "--compare", "--json"});
  CHECK(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.at("variant") == "cached");
  CHECK(report.at("within_tolerance") == true);
  CHECK(report.at("max_abs_difference").get<double>() <= 1.0);
  CHECK(report.at("total_values").get<std::size_t>() == 600u * 400u * 3u);
  CHECK(report.at("opencv_ms").get<double>() > 0);
  CHECK(report.at("kernel_ms").get<double>() > 0);
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
    const ComparisonStats s = compare_to_reference(cv::imread(out, cv::IMREAD_UNCHANGED), convolve(src, f, o).image, src, f,
                                                     ConvolveOptions{},
                                                     std::string(variant) == "fft" ? Variant::fft : Variant::fast);
    CHECK(s.within_tolerance);
  }
}

TEST_CASE("gpu cli: --compare outside the tolerance exits 6 and writes nothing") {
  TempDir dir;
  const std::string out = dir.file("bad.png");
  // CUCONV_TEST_CORRUPT_RESULT=1 adds 3 to every result value before the comparison.
  setenv("CUCONV_TEST_CORRUPT_RESULT", "1", 1);
  const auto r = run_cuconv({sample("camera.png"), out, "--filter", "gauss5", "--variant", "fast", "--compare", "--json"});
  unsetenv("CUCONV_TEST_CORRUPT_RESULT");
  INFO(r.err);
  CHECK(r.exit_code == 6);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.at("within_tolerance") == false);
  // 3 from the corruption, plus the at most 1 a correct result may differ by
  CHECK(report.at("max_abs_difference").get<double>() >= 3.0);
  CHECK(report.at("max_abs_difference").get<double>() <= 4.0);
  CHECK(r.err.find("beyond the tolerance") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}
