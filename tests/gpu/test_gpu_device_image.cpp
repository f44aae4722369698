// SPDX-License-Identifier: Apache-2.0
// The device-image entry point: convolve() from a device view to a device view gives what the
// host-image path gives, bit for bit, for every tested variant, layout (1, 3, 4 channels, alpha
// kept) and depth pair, with the output poisoned first; and it refuses what it cannot do.
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

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
