// SPDX-License-Identifier: Apache-2.0
// The device-image entry point: convolve() from a device view to a device view gives what the
// host-image path gives, bit for bit, for every tested variant, layout (1, 3, 4 channels, alpha
// kept) and depth pair, with the output poisoned first; it refuses what it cannot do; and it only
// queues: a call on a stream the test holds returns at once, and filters queued on two streams
// from one workspace keep their own weights.
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <string>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::random_filter;
using cuconv::test::random_image;
using cuconv::test::tested_gpu_variants;

namespace {

struct DepthPair {
  int in;
  Depth out;
};
constexpr DepthPair kPairs[] = {{CV_8U, Depth::u8}, {CV_8U, Depth::s16}, {CV_16U, Depth::f32}, {CV_32F, Depth::f32}};

/// Holds a stream: a host function queued on it waits until open() (it calls no CUDA function, as
/// host functions must not), so everything queued after it waits on the device, not on the host.
class StreamGate {
 public:
  void hold(cudaStream_t stream) { REQUIRE(cudaLaunchHostFunc(stream, &StreamGate::wait, this) == cudaSuccess); }
  void open() {
    {
      const std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  static void CUDART_CB wait(void* gate) {
    auto* self = static_cast<StreamGate*>(gate);
    std::unique_lock lock(self->mutex_);
    self->opened_.wait(lock, [self] { return self->open_; });
  }
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

}  // namespace

TEST_CASE("device images: convolve on device views equals the host-image path bit for bit") {
  GpuWorkspace workspace;
  int compared = 0;
  for (Variant variant : tested_gpu_variants()) {
    for (const DepthPair& pair : kPairs) {
      for (int channels : {1, 3, 4}) {
        for (bool keep_alpha : {false, true}) {
          if (keep_alpha && channels != 4) continue;
          // fft only takes large filters in practice; 5x5 and 9x9 cover the rest.
          const int k = variant == Variant::fft ? 17 : (channels == 3 ? 9 : 5);
          const std::string what = std::string(to_string(variant)) + " depth " + std::to_string(pair.in) + " -> " +
                                   std::string(to_string(pair.out)) + " x" + std::to_string(channels) +
                                   (keep_alpha ? " alpha kept" : "");
          CAPTURE(what);
          const cv::Mat src = random_image(47, 61, pair.in, channels, 500 + static_cast<std::uint64_t>(compared));
          const Filter filter = random_filter(k, k, 40 + static_cast<std::uint64_t>(k));
          ConvolveOptions options;
          options.variant = variant;
          options.depth = pair.out;
          options.keep_alpha = keep_alpha;
          options.border = Border::reflect;
          const cuconv::test::PoisonOutputs poisoned;
          const ConvolveResult host = convolve(src, filter, options);

          const DeviceImage in = upload(src);
          const DeviceImage out(src.cols, src.rows, channels, resolve_output_depth(pair.in, pair.out));
          const Variant ran = convolve(in.view(), out.view(), filter, options, workspace, nullptr);
          CHECK(ran == variant);
          CHECK(bit_equal(download(out.view()), host.image));
          ++compared;
        }
      }
    }
  }
  CHECK(compared >= static_cast<int>(tested_gpu_variants().size()) * 16);
}

TEST_CASE("device images: automatic picks as for a host image, and mismatched or CPU-only requests are usage errors") {
  GpuWorkspace workspace;
  const cv::Mat src = random_image(33, 40, CV_8U, 3, 7);
  const Filter filter = random_filter(3, 3, 8);
  const DeviceImage in = upload(src);
  ConvolveOptions options;
  const cuconv::test::PoisonOutputs poisoned;
  const ConvolveResult host = convolve(src, filter, options);
  const DeviceImage out(40, 33, 3, CV_8U);
  CHECK(convolve(in.view(), out.view(), filter, options, workspace, nullptr) == host.variant_used);
  CHECK(bit_equal(download(out.view()), host.image));

  const auto usage_error = [&](const DeviceImageView& dst, const ConvolveOptions& o) {
    try {
      static_cast<void>(convolve(in.view(), dst, filter, o, workspace, nullptr));
    } catch (const Error& e) {
      return e.kind() == ErrorKind::usage;
    }
    return false;
  };
  const DeviceImage narrow(39, 33, 3, CV_8U);
  const DeviceImage wrong_depth(40, 33, 3, CV_32F);
  CHECK(usage_error(narrow.view(), options));
  CHECK(usage_error(wrong_depth.view(), options));
  ConvolveOptions cpu = options;
  cpu.variant = Variant::opencv;
  CHECK(usage_error(out.view(), cpu));
  ConvolveOptions bench = options;
  bench.bench_runs = 3;
  CHECK(usage_error(out.view(), bench));
}

TEST_CASE(
    "device images: calls on a held stream return at once, and filters queued on two streams keep their weights") {
  // fast: weights as kernel arguments; basic: the workspace's device weights; tiled-halo on colour:
  // also the one constant filter and stream-ordered channel planes.
  for (Variant variant : {Variant::fast, Variant::basic, Variant::tiled_halo}) {
    if (!cuconv::test::variant_tested(variant)) continue;
    CAPTURE(std::string(to_string(variant)));
    const cv::Mat src = random_image(64, 80, CV_32F, 3, 61);
    const Filter warm = random_filter(5, 5, 62), first = random_filter(5, 5, 63), second = random_filter(5, 5, 64);
    ConvolveOptions options;
    options.variant = variant;
    const ConvolveResult first_host = convolve(src, first, options);
    const ConvolveResult second_host = convolve(src, second, options);
    const DeviceImage in = upload(src);
    const DeviceImage first_out(80, 64, 3, CV_32F), second_out(80, 64, 3, CV_32F);
    GpuWorkspace workspace;
    // CUDA loads a kernel on its first launch, which may wait for the device: load them first. The
    // workspace then holds other weights, which the calls below replace.
    static_cast<void>(convolve(in.view(), first_out.view(), warm, options, workspace, nullptr));
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const std::uint64_t allocations = workspace.allocations();

    cudaStream_t held = nullptr, idle = nullptr;
    REQUIRE(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking) == cudaSuccess);
    StreamGate gate;
    gate.hold(held);
    // On another thread, so a call that waits for the held stream is seen instead of hanging.
    std::future<void> calls = std::async(std::launch::async, [&] {
      static_cast<void>(convolve(in.view(), first_out.view(), first, options, workspace, held));
      static_cast<void>(convolve(in.view(), second_out.view(), second, options, workspace, idle));
    });
    const bool returned = calls.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    gate.open();
    calls.get();
    CHECK_MESSAGE(returned, "a call waited for a stream it only had to queue on");
    REQUIRE(cudaStreamSynchronize(held) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(idle) == cudaSuccess);
    CHECK(bit_equal(download(first_out.view()), first_host.image));
    CHECK(bit_equal(download(second_out.view()), second_host.image));
    CHECK(workspace.allocations() == allocations);  // filters of the same size reuse the weights' buffer
    cudaStreamDestroy(held);
    cudaStreamDestroy(idle);
  }
}

TEST_CASE("device images: filters queued on two streams take turns with the one constant filter") {
  // tiled-halo reads its weights from the device's one __constant__ filter. The second call's copy
  // into it must wait for the first call's kernel, which takes milliseconds on this image; a copy
  // that did not wait would land while that kernel runs and change part of its output.
  if (!cuconv::test::variant_tested(Variant::tiled_halo)) return;
  const cv::Mat src = random_image(2048, 2048, CV_32F, 1, 71);
  const Filter first = random_filter(9, 9, 72), second = random_filter(9, 9, 73);
  ConvolveOptions options;
  options.variant = Variant::tiled_halo;
  const ConvolveResult first_host = convolve(src, first, options);
  const ConvolveResult second_host = convolve(src, second, options);
  const DeviceImage in = upload(src);
  const DeviceImage first_out(2048, 2048, 1, CV_32F), second_out(2048, 2048, 1, CV_32F);
  GpuWorkspace first_workspace, second_workspace;  // two callers: only the constant filter is shared
  cudaStream_t one = nullptr, two = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&one, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&two, cudaStreamNonBlocking) == cudaSuccess);
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    static_cast<void>(convolve(in.view(), first_out.view(), first, options, first_workspace, one));
    static_cast<void>(convolve(in.view(), second_out.view(), second, options, second_workspace, two));
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(bit_equal(download(first_out.view()), first_host.image));
    CHECK(bit_equal(download(second_out.view()), second_host.image));
  }
  cudaStreamDestroy(one);
  cudaStreamDestroy(two);
}
