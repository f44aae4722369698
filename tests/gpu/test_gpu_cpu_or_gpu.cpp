// SPDX-License-Identifier: Apache-2.0
// `auto` in a process of its own, through the real binary on a GPU machine: -v says which side
// the CPU-or-GPU model took and why (src/engine/cpu_or_gpu.cpp), a small image on the CPU
// (variant opencv, CUDA untouched) and a large filter on a large image on the GPU.
#include "engine/cpu_or_gpu.hpp"
#include "test_support.hpp"

#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <string>
#include <thread>

using namespace cuconv;
using cuconv::test::run_cuconv;
using cuconv::test::TempDir;

TEST_CASE("gpu cli: -v says whether auto took the CPU or the GPU and why, on a small and a large image") {
  TempDir dir;
  const unsigned threads = std::thread::hardware_concurrency();
  {
    const cv::Mat small = cuconv::test::random_image(64, 64, CV_8U, 3, 91);
    REQUIRE(cv::imwrite(dir.file("small.png"), small));
    REQUIRE(engine::predict_cpu_or_gpu(load_filter("gauss5"), 64, 64, 3, 1, threads).cpu_faster());
    const auto r = run_cuconv({dir.file("small.png"), dir.file("small-out.png"), "--filter", "gauss5", "-v"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("auto: the CPU (about ") != std::string::npos);
    CHECK(r.err.find("variant opencv") != std::string::npos);
  }
  {
    // 4000 x 4000 RGB through gaussian:15,4 (the DFT's 90 ns a value on at most 4 threads):
    // about 1.1 s on the CPU against 0.5 s of start-up and copies.
    cv::Mat large(4000, 4000, CV_8UC3);
    cv::randu(large, 0, 256);
    REQUIRE(cv::imwrite(dir.file("large.png"), large, {cv::IMWRITE_PNG_COMPRESSION, 1}));
    REQUIRE_FALSE(engine::predict_cpu_or_gpu(load_filter("gaussian:15,4"), 4000, 4000, 3, 1, threads).cpu_faster());
    const auto r = run_cuconv({dir.file("large.png"), dir.file("large-out.png"), "--filter", "gaussian:15,4", "-v"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("auto: the GPU (about ") != std::string::npos);
    CHECK(r.err.find("variant opencv") == std::string::npos);
  }
}
