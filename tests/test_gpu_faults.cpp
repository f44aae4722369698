// GPU faults through the real binary: running out of device memory and a failed launch, made to
// happen on a healthy GPU by the test-only hook CUCONV_TEST_GPU_FAULT=alloc|launch
// (src/gpu/fault_injection.hpp). An explicit GPU variant exits 5 with a message naming the problem
// and writes nothing; `--variant auto` warns and filters with OpenCV instead, so its output is
// cv::filter2D's (the opencv variant's) exactly. The no-device case is the CPU suite's
// (tests/test_cli.cpp).
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <stdlib.h>  // setenv, unsetenv

#include <filesystem>
#include <string>
#include <vector>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

struct Fault {
  const char* name;     ///< CUCONV_TEST_GPU_FAULT value
  const char* message;  ///< what the error says
};
constexpr Fault kFaults[] = {{"alloc", "out of device memory: needed"}, {"launch", "cudaErrorLaunchFailure"}};

/// Runs cuconv with CUCONV_TEST_GPU_FAULT set to `fault` for that run only.
test::CommandResult run_with_fault(const char* fault, const std::vector<std::string>& args) {
  setenv("CUCONV_TEST_GPU_FAULT", fault, 1);
  const test::CommandResult r = run_cuconv(args);
  unsetenv("CUCONV_TEST_GPU_FAULT");
  return r;
}

/// True when `dir` holds no file at all (no output, no temporary file left behind).
bool empty_folder(const TempDir& dir) { return std::filesystem::is_empty(dir.path()); }

}  // namespace

TEST_CASE("gpu faults: an explicit variant exits 5, names the problem and writes nothing") {
  // fast and fft: the interleaved path; tiled-halo: the per-channel planes.
  for (const Fault& fault : kFaults) {
    for (const char* variant : {"fast", "tiled-halo", "fft"}) {
      TempDir dir;
      const std::string out = dir.file("out.png");
      const auto r = run_with_fault(fault.name, {sample("coffee.png"), out, "--filter", "gauss5", "--variant", variant});
      INFO(fault.name, " ", variant, " stderr: ", r.err);
      CHECK(r.exit_code == static_cast<int>(ExitCode::gpu));
      CHECK(r.err.find(fault.message) != std::string::npos);
      CHECK(r.err.find("cuconv: error:") != std::string::npos);
      CHECK(empty_folder(dir));
    }
  }
}

TEST_CASE("gpu faults: --variant auto warns, falls back to OpenCV and writes cv::filter2D's result") {
  const cv::Mat src = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
  REQUIRE(!src.empty());
  ConvolveOptions opencv;
  opencv.variant = Variant::opencv;
  for (const Fault& fault : kFaults) {
    // auto picks fast for gauss5 (interleaved) and tiled-halo for box:31 on 8U (planes per channel)
    for (const char* spec : {"gauss5", "box:31"}) {
      TempDir dir;
      const std::string out = dir.file("out.png");
      const auto r = run_with_fault(fault.name, {sample("coffee.png"), out, "--filter", spec, "-v"});
      INFO(fault.name, " ", spec, " stderr: ", r.err);
      REQUIRE(r.exit_code == 0);
      CHECK(r.err.find("cuconv: warning:") != std::string::npos);
      CHECK(r.err.find(fault.message) != std::string::npos);
      CHECK(r.err.find("filtered with OpenCV on the CPU instead") != std::string::npos);
      CHECK(r.err.find("variant opencv") != std::string::npos);  // the -v stage line
      const cv::Mat written = cv::imread(out, cv::IMREAD_UNCHANGED);
      CHECK(bit_equal(written, convolve(src, load_filter(spec), opencv).image));
    }
  }
}

TEST_CASE("gpu faults: without the hook the same runs use the GPU (the hook is off unless set)") {
  TempDir dir;
  const auto r = run_cuconv({sample("coffee.png"), dir.file("out.png"), "--filter", "gauss5", "-v"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("variant fast") != std::string::npos);
  CHECK(r.err.find("warning") == std::string::npos);
}

TEST_CASE("gpu faults: --gpu-memory below one strip row exits 5 for an explicit variant, auto falls back") {
  TempDir dir;
  const std::string out = dir.file("out.png");
  auto r = run_cuconv({sample("coffee.png"), out, "--filter", "gauss5", "--variant", "fast", "--gpu-memory", "1K"});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::gpu));
  CHECK(r.err.find("does not fit the GPU memory limit of 1024 bytes") != std::string::npos);
  CHECK(empty_folder(dir));
  r = run_cuconv({sample("coffee.png"), out, "--filter", "gauss5", "--gpu-memory", "1K"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("filtered with OpenCV on the CPU instead") != std::string::npos);
  // A limit that cuts the image into strips: -v says how many, the image is the unstriped one.
  const std::string whole = dir.file("whole.png");
  r = run_cuconv({sample("coffee.png"), whole, "--filter", "gauss5", "--variant", "fast", "-v"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(", 1 strip(s)") != std::string::npos);  // ", 11 strip(s)" must not match
  const std::string striped = dir.file("striped.png");
  r = run_cuconv({sample("coffee.png"), striped, "--filter", "gauss5", "--variant", "fast", "--gpu-memory", "256K", "-v"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(", 1 strip(s)") == std::string::npos);
  CHECK(r.err.find(" strip(s)") != std::string::npos);
  CHECK(bit_equal(cv::imread(striped, cv::IMREAD_UNCHANGED), cv::imread(whole, cv::IMREAD_UNCHANGED)));
}

TEST_CASE("gpu faults: batch mode under auto warns per image and writes cv::filter2D's results") {
  TempDir dir;
  const std::string out_dir = dir.file("out");
  const auto r = run_with_fault("launch", {"--out-dir", out_dir, sample("camera.png"), sample("coffee.png"), "--filter",
                                           "gauss5", "--jobs", "2"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  ConvolveOptions opencv;
  opencv.variant = Variant::opencv;
  for (const char* name : {"camera.png", "coffee.png"}) {
    CHECK(r.err.find(name + std::string(": variant fast failed on the GPU")) != std::string::npos);
    const cv::Mat src = cv::imread(sample(name), cv::IMREAD_UNCHANGED);
    const cv::Mat written = cv::imread(out_dir + "/" + name, cv::IMREAD_UNCHANGED);
    CHECK(bit_equal(written, convolve(src, load_filter("gauss5"), opencv).image));
  }
}

TEST_CASE("gpu faults: --compare under auto has no GPU result to compare: exit 5 with the fault, nothing written") {
  TempDir dir;
  const auto r = run_with_fault("launch", {sample("coffee.png"), dir.file("out.png"), "--filter", "gauss5", "--compare"});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::gpu));
  CHECK(r.err.find("--compare needs a GPU result") != std::string::npos);
  CHECK(r.err.find("cudaErrorLaunchFailure") != std::string::npos);
  CHECK(empty_folder(dir));
}
