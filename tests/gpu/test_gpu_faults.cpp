// SPDX-License-Identifier: Apache-2.0
// GPU faults: running out of device memory and a failed launch, made to happen on a healthy GPU
// by a fault injector the tests plug into the GPU layer (src/gpu/seams.hpp, tests/support/gpu_seams.hpp).
// An explicit GPU variant throws Error{gpu} naming the problem; `auto` falls back to OpenCV and
// says why, so its result is cv::filter2D's (the opencv variant's) exactly. Through the real
// binary (exit 5, nothing written, the warnings; batch mode; --compare) a --gpu-memory limit below
// one strip row makes the GPU error without any hook. The no-device case is the CPU suite's
// (tests/cpu/test_cli.cpp).
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

/// The next device allocation fails as out of memory (once), or every variant launch fails.
class PlantedFault final : public gpu::FaultInjector {
 public:
  enum class Kind { alloc, launch };
  explicit PlantedFault(Kind kind) : kind_(kind) {}
  cudaError_t before_allocation(std::size_t) noexcept override {
    return kind_ == Kind::alloc && pending_.exchange(false) ? cudaErrorMemoryAllocation : cudaSuccess;
  }
  cudaError_t before_launch(Variant) noexcept override {
    return kind_ == Kind::launch ? cudaErrorLaunchFailure : cudaSuccess;
  }
  [[nodiscard]] bool fired() const noexcept { return kind_ == Kind::launch || !pending_.load(); }

 private:
  Kind kind_;
  std::atomic<bool> pending_{true};
};

struct Fault {
  PlantedFault::Kind kind;
  const char* name;
  const char* message;  ///< what the error says
};
constexpr Fault kFaults[] = {{PlantedFault::Kind::alloc, "alloc", "out of device memory: needed"},
                             {PlantedFault::Kind::launch, "launch", "cudaErrorLaunchFailure"}};

/// True when `dir` holds no file at all (no output, no temporary file left behind).
bool empty_folder(const TempDir& dir) { return std::filesystem::is_empty(dir.path()); }

cv::Mat coffee() {
  cv::Mat src = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
  REQUIRE(!src.empty());
  return src;
}

}  // namespace

TEST_CASE("gpu faults: an explicit variant throws Error{gpu} naming the problem") {
  const cv::Mat src = coffee();
  // fast and fft: the interleaved path; tiled-halo: the per-channel planes.
  for (const Fault& fault : kFaults) {
    for (Variant variant : {Variant::fast, Variant::tiled_halo, Variant::fft}) {
      INFO(fault.name, " ", std::string(to_string(variant)));
      ConvolveOptions options;
      options.variant = variant;
      PlantedFault planted(fault.kind);
      const test::ScopedFaultInjector installed(planted);
      try {
        (void)convolve(src, load_filter("gauss5"), options);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::gpu);
        CHECK(std::string(e.what()).find(fault.message) != std::string::npos);
      }
      CHECK(planted.fired());
    }
  }
}

TEST_CASE("gpu faults: auto falls back to OpenCV, says why and gives cv::filter2D's result") {
  const cv::Mat src = coffee();
  ConvolveOptions opencv;
  opencv.variant = Variant::opencv;
  for (const Fault& fault : kFaults) {
    // auto picks fast or tensor for gauss5 (by the device's row) and a planar or fft path for box:31 on 8U
    for (const char* spec : {"gauss5", "box:31"}) {
      INFO(fault.name, " ", spec);
      const Filter filter = load_filter(spec);
      PlantedFault planted(fault.kind);
      ConvolveResult result;
      {
        const test::ScopedFaultInjector installed(planted);
        result = convolve(src, filter, ConvolveOptions{});
      }
      CHECK(planted.fired());
      CHECK(result.variant_used == Variant::opencv);
      CHECK(result.fallback_reason.find("failed on the GPU") != std::string::npos);
      CHECK(result.fallback_reason.find(fault.message) != std::string::npos);
      CHECK(bit_equal(result.image, convolve(src, filter, opencv).image));
    }
  }
  // Once the injector is gone, the GPU runs again (auto's choice on this device's row).
  CHECK(to_string(convolve(src, load_filter("gauss5"), ConvolveOptions{}).variant_used) ==
        test::auto_choice("gauss5", "coffee.png"));
}

TEST_CASE("gpu faults: the binary with no injector uses the GPU (nothing read from the environment)") {
  TempDir dir;
  // --variant fast: `auto` would take the CPU for so small an image in a process of its own.
  const auto r =
      run_cuconv({sample("coffee.png"), dir.file("out.png"), "--filter", "gauss5", "--variant", "fast", "-v"});
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
  r = run_cuconv(
      {sample("coffee.png"), striped, "--filter", "gauss5", "--variant", "fast", "--gpu-memory", "256K", "-v"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(", 1 strip(s)") == std::string::npos);
  CHECK(r.err.find(" strip(s)") != std::string::npos);
  CHECK(bit_equal(cv::imread(striped, cv::IMREAD_UNCHANGED), cv::imread(whole, cv::IMREAD_UNCHANGED)));
}

TEST_CASE("gpu faults: batch mode under auto warns per image and writes cv::filter2D's results") {
  TempDir dir;
  const std::string out_dir = dir.file("out");
  // A limit below one strip row: every image's GPU run fails, as a failed launch would.
  const auto r = run_cuconv({"--out-dir", out_dir, sample("camera.png"), sample("coffee.png"), "--filter", "gauss5",
                             "--jobs", "2", "--gpu-memory", "1K"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  ConvolveOptions opencv;
  opencv.variant = Variant::opencv;
  for (const char* name : {"camera.png", "coffee.png"}) {
    CHECK(r.err.find(name + std::string(": variant ") + test::auto_choice("gauss5", name) + " failed on the GPU") !=
          std::string::npos);
    const cv::Mat src = cv::imread(sample(name), cv::IMREAD_UNCHANGED);
    const cv::Mat written = cv::imread(out_dir + "/" + name, cv::IMREAD_UNCHANGED);
    CHECK(bit_equal(written, convolve(src, load_filter("gauss5"), opencv).image));
  }
}

TEST_CASE("gpu faults: --compare under auto has no GPU result to compare: exit 5 with the fault, nothing written") {
  TempDir dir;
  const auto r =
      run_cuconv({sample("coffee.png"), dir.file("out.png"), "--filter", "gauss5", "--compare", "--gpu-memory", "1K"});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::gpu));
  CHECK(r.err.find("--compare needs a GPU result") != std::string::npos);
  CHECK(r.err.find("does not fit the GPU memory limit") != std::string::npos);
  CHECK(empty_folder(dir));
}
