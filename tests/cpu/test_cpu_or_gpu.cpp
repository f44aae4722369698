// SPDX-License-Identifier: Apache-2.0
// `auto`'s CPU-or-GPU prediction without a warm GPU (src/engine/cpu_or_gpu.cpp): a small image
// goes to the CPU, a large filter on a large image to the GPU, and the boundary between them
// moves with the model's constants as the model says.
#include "engine/cpu_or_gpu.hpp"

#include <cuconv/filter.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace cuconv;
using cuconv::engine::CpuOrGpu;
using cuconv::engine::CpuOrGpuCosts;
using cuconv::engine::predict_cpu_or_gpu;

namespace {

/// The side of the smallest square one-channel 8-bit image that `filter` sends to the GPU under
/// `costs` on 4 threads (bisection: the CPU's time grows faster with the pixels than the copies').
int gpu_from_side(const Filter& filter, const CpuOrGpuCosts& costs) {
  int low = 1;        // the CPU
  int high = 100000;  // the GPU
  REQUIRE(predict_cpu_or_gpu(filter, low, low, 1, 1, 4, costs).cpu_faster());
  REQUIRE_FALSE(predict_cpu_or_gpu(filter, high, high, 1, 1, 4, costs).cpu_faster());
  while (high - low > 1) {
    const int mid = low + (high - low) / 2;
    (predict_cpu_or_gpu(filter, mid, mid, 1, 1, 4, costs).cpu_faster() ? low : high) = mid;
  }
  return high;
}

}  // namespace

TEST_CASE("cpu or gpu: a small image goes to the CPU, a large filter on a large image to the GPU") {
  const Filter gauss5 = load_filter("gauss5");
  const Filter large = load_filter("gaussian:15,4");
  REQUIRE(large.width * large.height >= CpuOrGpuCosts{}.dft_from_taps);
  for (const unsigned threads : {1U, 2U, 16U}) {
    INFO(threads << " threads");
    const CpuOrGpu small = predict_cpu_or_gpu(gauss5, 64, 64, 3, 1, threads);
    CHECK(small.cpu_faster());
    CHECK(small.reason().find("auto: the CPU") == 0);
    const CpuOrGpu big = predict_cpu_or_gpu(large, 6000, 4000, 3, 1, threads);
    CHECK_FALSE(big.cpu_faster());
    CHECK(big.reason().find("auto: the GPU") == 0);
    CHECK(big.gpu_ms < big.cpu_ms);
  }
  // The measured numbers themselves: 4 threads at most, 0.5 ns a tap, 90 ns a value past 121 taps.
  const CpuOrGpu four = predict_cpu_or_gpu(gauss5, 1000, 1000, 1, 1, 4);
  CHECK(four.cpu_ms == doctest::Approx(1e6 * 25 * 0.5 * 1e-6 / 4));
  CHECK(predict_cpu_or_gpu(gauss5, 1000, 1000, 1, 1, 64).cpu_ms == doctest::Approx(four.cpu_ms));
  CHECK(predict_cpu_or_gpu(large, 1000, 1000, 1, 1, 1).cpu_ms == doctest::Approx(90.0));
  CHECK(four.gpu_ms == doctest::Approx(500.0 + 2.0 * 1e6 / 10e6));
  CHECK(predict_cpu_or_gpu(gauss5, 1000, 1000, 1, 2, 4).gpu_ms == doctest::Approx(500.0 + 4.0 * 1e6 / 10e6));
}

TEST_CASE("cpu or gpu: the boundary moves with the constants") {
  const Filter gauss7 = load_filter("gauss7");  // 49 taps: the direct sum's cost
  const CpuOrGpuCosts measured;
  const int side = gpu_from_side(gauss7, measured);
  // 49 x 0.5 ns / 4 threads = 6.125 ns a value on the CPU against 0.2 ns of copies: the image of
  // 500 / (6.125 - 0.2) ns, about 84 million values, 9187 on a side.
  CHECK(side == doctest::Approx(9187).epsilon(0.001));

  CpuOrGpuCosts slow_start = measured;
  slow_start.gpu_startup_ms *= 4;  // four times the values: twice the side
  CHECK(gpu_from_side(gauss7, slow_start) == doctest::Approx(2 * side).epsilon(0.001));

  CpuOrGpuCosts slow_cpu = measured;
  slow_cpu.cpu_ns_per_tap *= 2;  // 12.25 ns a value: the GPU from (5.925 / 12.05)^0.5 of the side
  CHECK(gpu_from_side(gauss7, slow_cpu) == doctest::Approx(side * 0.7012).epsilon(0.001));

  CpuOrGpuCosts slow_copies = measured;
  slow_copies.gpu_copy_bytes_per_ms /= 10;  // 2 ns of copies a value: (5.925 / 4.125)^0.5
  CHECK(gpu_from_side(gauss7, slow_copies) == doctest::Approx(side * 1.1985).epsilon(0.001));

  CpuOrGpuCosts more_threads = measured;
  more_threads.cpu_effective_threads = 16;  // asked for 4: still 4
  CHECK(gpu_from_side(gauss7, more_threads) == side);

  CpuOrGpuCosts direct_always = measured;
  direct_always.dft_from_taps = 1000;  // gaussian:15,4's 225 taps summed directly: 28.1 ns a value
  const Filter large = load_filter("gaussian:15,4");
  CHECK(gpu_from_side(large, direct_always) < gpu_from_side(large, measured));  // against 22.5 ns through the DFT
}
