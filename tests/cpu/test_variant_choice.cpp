// SPDX-License-Identifier: Apache-2.0
// Which variant auto picks (and its per-GPU tuning table), and an explicit GPU variant without a device.
#include "convolve/choose_variant.hpp"
#include "gpu/launch/cufft_api.hpp"
#include "gpu/launch/fft_ties.hpp"
#include "gpu/launch/launch.hpp"  // device_runs_wgmma
#include "gpu/tuning/auto_tuning.hpp"
#include "test_support.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstddef>
#include <utility>

using namespace cuconv;
using cuconv::test::random_image;

namespace {

/// auto's choice for a `width` x `height` image of `channels` on `row`, the warpgroup kernel
/// running or not, of `depth` in and out (8-bit unless said).
Variant choose_on(const Filter& f, int channels, int width, int height, const gpu::tuning::AutoTuning& row, bool wgmma,
                  const ConvolveOptions& options = {}, int depth = CV_8U) {
  const filter::FilterSplits splits = filter::filter_splits(f.weights, f.width, f.height, depth, depth, 0.0);
  bool (*runs)() = wgmma ? +[] { return true; } : +[] { return false; };
  return convolution::choose_auto(
      {f, options, splits.separable, splits.dense_tensor, depth, depth, channels, width, height}, {true, &row, runs});
}

/// A random dense (not rank-1) k x k filter.
Filter random_dense(int k, int seed) {
  Filter f;
  f.width = f.height = k;
  cv::RNG rng(static_cast<std::uint64_t>(seed));
  for (int i = 0; i < k * k; ++i) f.weights.push_back(rng.uniform(-0.3, 1.0) / (k * k));
  f.origin = "random dense";
  return f;
}

}  // namespace

TEST_CASE("an explicit GPU variant without a device is a GPU error") {
  std::string reason;
  if (cuda_device_available(&reason)) {
    MESSAGE("a CUDA device is present; the no-device error cannot be provoked here");
    return;
  }
  ConvolveOptions o;
  o.variant = Variant::basic;
  try {
    (void)convolve(random_image(4, 4, CV_8U, 1, 1), load_filter("box3"), o);
    FAIL("no exception");
  } catch (const cuconv::Error& e) {
    CHECK(e.kind() == ErrorKind::gpu);
    CHECK(std::string(e.what()).find("needs a CUDA device") != std::string::npos);
  }
  o.variant = Variant::automatic;
  CHECK(convolve(random_image(4, 4, CV_8U, 1, 1), load_filter("box3"), o).variant_used == Variant::opencv);
}

TEST_CASE("auto picks fast only where it has compiled kernels: same depth in and out") {
  const Filter sobel = load_filter("sobel-x");
  CHECK(choose_variant(sobel, ConvolveOptions{}, true, CV_8U, CV_8U) == Variant::fast);
  CHECK(choose_variant(sobel, ConvolveOptions{}, true, CV_32F, CV_32F) == Variant::fast);
  // 8U -> 16S (Sobel's usual output) and 8U -> 32F would run fast's generic kernel.
  CHECK(choose_variant(sobel, ConvolveOptions{}, true, CV_8U, CV_16S) != Variant::fast);
  CHECK(choose_variant(sobel, ConvolveOptions{}, true, CV_8U, CV_32F) != Variant::fast);
  CHECK(choose_variant(sobel, ConvolveOptions{}, false, CV_8U, CV_8U) == Variant::opencv);
}

TEST_CASE("auto: dense 8-bit 5x5 on one channel takes tensor only on large images where the warpgroup kernel runs") {
  Filter f5;
  f5.width = f5.height = 5;
  cv::RNG rng(6);
  for (int i = 0; i < 25; ++i) f5.weights.push_back(rng.uniform(-0.3, 1.0) / 10.0);
  f5.origin = "random 5x5";
  // Without a size (and below 4096^2) `fast`; three channels take `tensor` at any size but tiny.
  CHECK(choose_variant(f5, ConvolveOptions{}, true, CV_8U, CV_8U) == Variant::fast);
  CHECK(choose_variant(f5, ConvolveOptions{}, true, CV_8U, CV_8U, 1, 4096, 4095) == Variant::fast);
  CHECK(choose_variant(f5, ConvolveOptions{}, true, CV_8U, CV_8U, 3) == Variant::tensor);
  // From 4096^2 it depends on the device: a compute capability 9.0 GPU (on a machine without one,
  // as CI's, `fast`).
  const bool wgmma = cuda_device_count() > 0 && gpu::device_runs_wgmma();
  for (const auto& [width, height] : {std::pair{4096, 4096}, std::pair{6000, 4000}, std::pair{8192, 8192}})
    CHECK(choose_variant(f5, ConvolveOptions{}, true, CV_8U, CV_8U, 1, width, height) ==
          (wgmma ? Variant::tensor : Variant::fast));
}

TEST_CASE("auto's tuning table: one row per kind of GPU, each size rule one entry the dispatcher reads") {
  using namespace gpu::tuning;
  // Rows by compute capability, and by product where two share one; everything else is generic.
  CHECK(&auto_tuning_for({9, 0, "NVIDIA H200"}) == &kSm90H200);
  CHECK(&auto_tuning_for({9, 0, "NVIDIA H100 80GB HBM3"}) == &kSm90H100);
  CHECK(&auto_tuning_for({8, 0, "NVIDIA A100-SXM4-80GB"}) == &kGeneric);
  CHECK(&auto_tuning_for({}) == &kGeneric);
  CHECK(kGeneric.dense_u8_large_min_pixels == kNever);  // the warpgroup kernel runs on 9.0 only

  const auto choose = [](const Filter& f, int channels, int side, const AutoTuning& row, bool wgmma) {
    return choose_on(f, channels, side, side, row, wgmma);
  };
  // The warpgroup size rule: a dense one-channel 5x5 takes tensor from the row's size, where the
  // kernel runs; never on the generic row.
  Filter f5;
  f5.width = f5.height = 5;
  cv::RNG rng(6);
  for (int i = 0; i < 25; ++i) f5.weights.push_back(rng.uniform(-0.3, 1.0) / 10.0);
  REQUIRE(kSm90H100.dense_u8_large_min_pixels == 4096LL * 4096);
  const int large = 4096;
  CHECK(choose(f5, 1, large, kSm90H100, true) == Variant::tensor);
  CHECK(choose_on(f5, 1, large, large - 1, kSm90H100, true) == Variant::fast);
  CHECK(choose(f5, 1, large, kSm90H100, false) == Variant::fast);
  CHECK(choose(f5, 1, 8192, kGeneric, true) == Variant::fast);
  // The rank-1 size rule (the H200's entry to measure): gauss5 stays on fast until a row sets a
  // size, then takes tensor from it on 8-bit images.
  const Filter gauss5 = load_filter("gauss5");
  const int big = 16384;
  CHECK(choose(gauss5, 1, big, kSm90H200, true) == Variant::fast);
  AutoTuning measured = kSm90H200;
  measured.tensor_rank1_small_min_pixels = static_cast<long long>(big) * big;
  CHECK(choose(gauss5, 1, big, measured, true) == Variant::tensor);
  CHECK(choose_on(gauss5, 1, big, big - 1, measured, true) == Variant::fast);
  CHECK(choose(load_filter("box:5"), 1, big, measured, true) == Variant::tensor);  // any rank-1 whose split holds
  CHECK(choose(gauss5, 1, big, kSm90H100, true) == Variant::fast);                 // the H100's row has no such rule
  // No GPU: OpenCV, whatever the row.
  const filter::FilterSplits splits = filter::filter_splits(f5.weights, 5, 5, CV_8U, CV_8U, 0.0);
  const ConvolveOptions options;
  CHECK(convolution::choose_auto({f5, options, splits.separable, splits.dense_tensor, CV_8U, CV_8U, 1, large, large},
                                 {}) == Variant::opencv);
}

TEST_CASE("auto keeps tiny images on fast where its tile kernel runs, tensor's rules elsewhere") {
  using gpu::tuning::kSm90H100;
  using gpu::tuning::kSm90H200;
  const Filter gauss9 = load_filter("gaussian:4,1.5");
  const Filter gauss5 = load_filter("gauss5");
  const Filter dense7 = random_dense(7, 11);
  // fast's tile kernel: at most 256 tiles of 32 elements x 8 rows, 1024 from 7x7, and 1024 tiles'
  // worth of 17x17 taps (src/gpu/launch/fast_rules.cuh); the rules for large images send these to
  // tensor.
  CHECK(choose_on(gauss9, 1, 64, 64, kSm90H100, true) == Variant::fast);
  CHECK(choose_on(gauss9, 1, 512, 512, kSm90H100, true) == Variant::fast);    // 1024 tiles
  CHECK(choose_on(gauss9, 1, 513, 512, kSm90H100, true) == Variant::tensor);  // 1088
  CHECK(choose_on(gauss9, 3, 64, 64, kSm90H100, true) == Variant::fast);      // 6 x 8 tiles
  CHECK(choose_on(gauss9, 1, 4096, 4096, kSm90H100, true) == Variant::tensor);
  CHECK(choose_on(dense7, 1, 256, 256, kSm90H100, true) == Variant::fast);    // 256 tiles
  CHECK(choose_on(dense7, 1, 512, 512, kSm90H100, true) == Variant::fast);    // 1024 from 7x7
  CHECK(choose_on(dense7, 1, 544, 512, kSm90H100, true) == Variant::tensor);  // 1088
  CHECK(choose_on(dense7, 4, 64, 64, kSm90H100, true) == Variant::fast);
  CHECK(choose_on(gauss5, 3, 64, 64, kSm90H200, true) == Variant::fast);  // the H200's colour 5x5 rule
  CHECK(choose_on(gauss5, 3, 1024, 1024, kSm90H200, true) == Variant::tensor);
  // 8-bit rank-1 filters that tensor would take: up to 15x15 and 1024 tiles' worth of 9x9 taps.
  const Filter gauss15 = load_filter("gaussian:7,2.5");
  CHECK(choose_on(gauss15, 1, 64, 64, kSm90H100, true) == Variant::fast);
  CHECK(choose_on(gauss15, 1, 256, 256, kSm90H100, true) == Variant::fast);               // 256 tiles of 225 taps
  CHECK(choose_on(gauss15, 1, 256, 512, kSm90H100, true) == Variant::tensor);             // 512
  CHECK(choose_on(gauss9, 3, 256, 256, kSm90H100, true) == Variant::fast);                // 768 tiles of 81 taps
  CHECK(choose_on(random_dense(15, 12), 1, 512, 512, kSm90H100, true) == Variant::fast);  // dense: 1024
  const Filter gauss31 = load_filter("gaussian:15,5");
  CHECK(choose_on(gauss31, 3, 64, 64, kSm90H100, true) == Variant::tensor);               // 8-bit rank-1 past 15x15
  CHECK(choose_on(random_dense(31, 13), 3, 64, 64, kSm90H100, true) == Variant::fast);    // 48 tiles
  CHECK(choose_on(random_dense(31, 13), 1, 256, 256, kSm90H100, true) == Variant::fast);  // 256 tiles
  CHECK(choose_on(random_dense(31, 13), 3, 256, 256, kSm90H100, true) != Variant::fast);  // 768 of 961 taps
  // No size known: the rules for large images; filters past the tile kernel's radii; an anchor
  // off the centre (fast's generic kernel) and mixed depths keep their paths.
  CHECK(choose_on(gauss9, 1, 0, 0, kSm90H100, true) == Variant::tensor);
  CHECK(choose_on(load_filter("gaussian:16,5"), 1, 64, 64, kSm90H100, true) != Variant::fast);
  ConvolveOptions corner;
  corner.anchor_x = corner.anchor_y = 0;
  CHECK(choose_on(dense7, 1, 64, 64, kSm90H100, true, corner) == Variant::tensor);
  CHECK(choose_variant(dense7, ConvolveOptions{}, true, CV_8U, CV_16S, 1, 64, 64) != Variant::fast);
  // A row that turns the rule off gives tensor back (the planted defect the checks above catch).
  gpu::tuning::AutoTuning off = kSm90H100;
  off.tiny_images_on_fast = false;
  CHECK(choose_on(gauss9, 1, 64, 64, off, true) == Variant::tensor);
  CHECK(choose_on(dense7, 4, 64, 64, off, true) == Variant::tensor);
  // A row of 2^30 + 16 four-channel pixels: 2^32 + 64 elements, which wrap to 64 in 32 bits.
  CHECK(choose_on(gauss9, 4, (1 << 30) + 16, 1, kSm90H100, true) == Variant::tensor);
}

TEST_CASE("fft tie margin: on for 8-bit outputs of usual filters, off where it would cover over 1% of results") {
  using gpu::PixelType;
  const std::vector<double> box31(std::size_t{31} * 31, 1.0 / 961.0);
  // 2^-19 x 255 x sum|w| (1) + 256 x 2^-22
  const double box_margin = gpu::fft_tie_margin(PixelType::u8, PixelType::u8, box31.data(), box31.size());
  CHECK(box_margin == doctest::Approx(255.0 / 524288.0 + 256.0 / 4194304.0));
  CHECK(box_margin < gpu::kFftMaxTieMargin);
  CHECK(gpu::fft_tie_margin(PixelType::u8, PixelType::f32, box31.data(), box31.size()) == 0.0);
  CHECK(gpu::fft_tie_margin(PixelType::f32, PixelType::f32, box31.data(), box31.size()) == 0.0);
  // 16-bit outputs: float spacing alone passes the cap (8U -> 16S, 8U -> 16U, 16U -> 16U).
  CHECK(gpu::fft_tie_margin(PixelType::u8, PixelType::s16, box31.data(), box31.size()) == 0.0);
  CHECK(gpu::fft_tie_margin(PixelType::u8, PixelType::u16, box31.data(), box31.size()) == 0.0);
  CHECK(gpu::fft_tie_margin(PixelType::u16, PixelType::u16, box31.data(), box31.size()) == 0.0);
  // sum|w| of 300: 255 x 300 x 2^-19 = 0.146, off; NaN weights: off.
  std::vector<double> large(box31);
  large[0] = 300.0;
  CHECK(gpu::fft_tie_margin(PixelType::u8, PixelType::u8, large.data(), large.size()) == 0.0);
  large[0] = std::nan("");
  CHECK(gpu::fft_tie_margin(PixelType::u8, PixelType::u8, large.data(), large.size()) == 0.0);
}

TEST_CASE("auto sends large dense filters to tensor where their splits hold, else fft or direct sums") {
  Filter dense;
  dense.width = dense.height = 31;
  dense.weights.resize(std::size_t{31} * 31);
  cv::RNG rng(5);
  for (double& w : dense.weights) w = rng.uniform(-0.3, 1.0) / 961.0;
  dense.origin = "random 31x31";
  const Variant large_filter_path = gpu::cufft_api() != nullptr ? Variant::fft : Variant::tiled_halo;
  // Float: `tensor` where its split holds, from 256 taps up to 31x31; fft past 31 or where it does not hold.
  CHECK(choose_variant(dense, ConvolveOptions{}, true, CV_32F, CV_32F) == Variant::tensor);
  Filter rectangle = dense;
  rectangle.width = 31;
  rectangle.height = 9;
  rectangle.weights.resize(std::size_t{31} * 9);
  CHECK(choose_variant(rectangle, ConvolveOptions{}, true, CV_32F, CV_32F) == Variant::tensor);
  ConvolveOptions alpha;
  alpha.keep_alpha = true;
  CHECK(choose_variant(dense, alpha, true, CV_32F, CV_32F) == large_filter_path);
  Filter wider = dense;
  wider.width = wider.height = 33;
  wider.weights.assign(std::size_t{33} * 33, 1.0 / 1089);
  CHECK(choose_variant(wider, ConvolveOptions{}, true, CV_32F, CV_32F) == large_filter_path);
  Filter spike = dense;
  spike.weights.assign(std::size_t{31} * 31, 1e-3);
  spike.weights[480] = 1.0;
  CHECK(choose_variant(spike, ConvolveOptions{}, true, CV_32F, CV_32F) == large_filter_path);
  CHECK(choose_variant(load_filter("box:15"), ConvolveOptions{}, true, CV_32F, CV_32F) == Variant::fast);
  // 8-bit: `tensor` (the planes kernel past 17x17) where the split holds; fft with a kept alpha.
  CHECK(choose_variant(dense, ConvolveOptions{}, true, CV_8U, CV_8U) == Variant::tensor);
  CHECK(choose_variant(rectangle, ConvolveOptions{}, true, CV_8U, CV_8U) == Variant::tensor);
  CHECK(choose_variant(dense, alpha, true, CV_8U, CV_8U) == large_filter_path);
  CHECK(choose_variant(wider, ConvolveOptions{}, true, CV_8U, CV_8U) == large_filter_path);
  CHECK(choose_variant(dense, ConvolveOptions{}, true, CV_8U, CV_16S) == Variant::tiled_halo);
  // 16-bit: `tensor` where its split holds (normalised filters), direct sums where it does not.
  Filter normalised = dense;
  double total = 0;
  for (double w : normalised.weights) total += w;
  for (double& w : normalised.weights) w /= total;
  CHECK(choose_variant(normalised, ConvolveOptions{}, true, CV_16U, CV_16U) == Variant::tensor);
  CHECK(choose_variant(spike, ConvolveOptions{}, true, CV_16U, CV_16U) == Variant::tiled_halo);
  CHECK(choose_variant(normalised, alpha, true, CV_16U, CV_16U) == Variant::tiled_halo);
  // A rank-1 31x31 on 16 bits: fast's double-precision separable sums.
  CHECK(choose_variant(load_filter("gaussian:15,5"), ConvolveOptions{}, true, CV_16U, CV_16U) == Variant::fast);
  CHECK(choose_variant(load_filter("box:31"), ConvolveOptions{}, true, CV_16U, CV_16U) == Variant::fast);
  dense.weights[0] = 300.0;  // results near ties too many to sum again
  CHECK(choose_variant(dense, ConvolveOptions{}, true, CV_8U, CV_8U) == Variant::tiled_halo);
}

TEST_CASE("auto sends dense 8-bit filters of more than 25 taps up to 31x31 to tensor where its split holds") {
  const auto random_dense = [](int kw, int kh) {
    Filter f;
    f.width = kw;
    f.height = kh;
    cv::RNG rng(static_cast<std::uint64_t>(kw * 100 + kh));
    for (int k = 0; k < kw * kh; ++k) f.weights.push_back(rng.uniform(-0.3, 1.0) / (kw * kh));
    f.origin = "random";
    return f;
  };
  const ConvolveOptions defaults;
  CHECK(choose_variant(random_dense(9, 9), defaults, true, CV_8U, CV_8U) == Variant::tensor);
  CHECK(choose_variant(random_dense(17, 17), defaults, true, CV_8U, CV_8U) == Variant::tensor);
  CHECK(choose_variant(random_dense(17, 3), defaults, true, CV_8U, CV_8U) == Variant::tensor);
  CHECK(choose_variant(random_dense(19, 19), defaults, true, CV_8U, CV_8U) == Variant::tensor);
  CHECK(choose_variant(random_dense(31, 5), defaults, true, CV_8U, CV_8U) == Variant::tensor);
  // 5x5 stays on fast on one channel and takes tensor on three and four (colour images); a
  // rank-1 5x5 stays on fast's separable path; past 31 a side, other depths and a kept alpha
  // channel leave tensor.
  CHECK(choose_variant(random_dense(5, 5), defaults, true, CV_8U, CV_8U) == Variant::fast);
  CHECK(choose_variant(random_dense(5, 5), defaults, true, CV_8U, CV_8U, 3) == Variant::tensor);
  CHECK(choose_variant(random_dense(5, 5), defaults, true, CV_8U, CV_8U, 4) == Variant::tensor);
  CHECK(choose_variant(random_dense(3, 3), defaults, true, CV_8U, CV_8U, 3) == Variant::fast);
  CHECK(choose_variant(load_filter("gauss5"), defaults, true, CV_8U, CV_8U, 3) == Variant::fast);
  CHECK(choose_variant(random_dense(33, 33), defaults, true, CV_8U, CV_8U) != Variant::tensor);
  CHECK(choose_variant(random_dense(9, 9), defaults, true, CV_8U, CV_16S) != Variant::tensor);
  CHECK(choose_variant(random_dense(9, 9), defaults, true, CV_16U, CV_16U) != Variant::tensor);
  // 16-bit: from 15x15, and off-centre filters `fast` has no kernel for, where the split holds
  // (normalised weights).
  const auto normalised = [&](int kw, int kh) {
    Filter f = random_dense(kw, kh);
    double total = 0;
    for (double w : f.weights) total += w;
    for (double& w : f.weights) w /= total;
    return f;
  };
  CHECK(choose_variant(normalised(15, 15), defaults, true, CV_16U, CV_16U) == Variant::tensor);
  // Colour: `fast` up to its unrolled 15x15, `tensor` past it and where `fast` has no kernel.
  CHECK(choose_variant(normalised(15, 15), defaults, true, CV_16U, CV_16U, 3) == Variant::fast);
  CHECK(choose_variant(normalised(15, 15), defaults, true, CV_16U, CV_16U, 4) == Variant::fast);
  CHECK(choose_variant(random_dense(17, 17), defaults, true, CV_16U, CV_16U, 3) == Variant::tensor);
  CHECK(choose_variant(random_dense(17, 17), defaults, true, CV_16U, CV_16U, 4) == Variant::tensor);
  CHECK(choose_variant(normalised(4, 3), defaults, true, CV_16U, CV_16U, 3) == Variant::tensor);
  CHECK(choose_variant(normalised(13, 13), defaults, true, CV_16U, CV_16U) == Variant::fast);
  CHECK(choose_variant(normalised(4, 3), defaults, true, CV_16U, CV_16U) == Variant::tensor);
  CHECK(choose_variant(normalised(15, 15), defaults, true, CV_16U, CV_32F) != Variant::tensor);
  CHECK(choose_variant(random_dense(9, 9), defaults, true, CV_32F, CV_32F) != Variant::tensor);
  ConvolveOptions alpha;
  alpha.keep_alpha = true;
  CHECK(choose_variant(random_dense(9, 9), alpha, true, CV_8U, CV_8U) != Variant::tensor);
  // A split that misses the rule (one weight of 1 beside tiny ones lost to the integers) does too.
  Filter spike = random_dense(9, 9);
  for (double& w : spike.weights) w = 1e-7;
  spike.weights[40] = 1.0;
  CHECK(choose_variant(spike, defaults, true, CV_8U, CV_8U) != Variant::tensor);
  CHECK(choose_variant(random_dense(9, 9), defaults, false, CV_8U, CV_8U) == Variant::opencv);
}

TEST_CASE("auto: 16-bit rank-1 filters owed double sums take tensor past the tile kernel where it measured faster") {
  using gpu::tuning::kSm90H100;
  const Filter gauss15 = load_filter("gaussian:7,2.5");
  const Filter gauss31 = load_filter("gaussian:15,5");
  // The tile kernel's double sums: tiles x K^2 up to 512 x 17^2 (fast_tile_double_applies).
  CHECK(choose_on(gauss15, 1, 128, 128, kSm90H100, true, {}, CV_16U) == Variant::fast);  // 64 tiles
  CHECK(choose_on(gauss15, 1, 256, 256, kSm90H100, true, {}, CV_16U) == Variant::fast);  // 256 tiles of 225 taps
  CHECK(choose_on(gauss31, 1, 128, 128, kSm90H100, true, {}, CV_16U) == Variant::fast);  // 64 tiles of 961 taps
  // Past it, tensor's digit sums for 31x31 on colour images up to 1024^2 elements.
  CHECK(choose_on(gauss31, 3, 128, 128, kSm90H100, true, {}, CV_16U) == Variant::tensor);  // 192 tiles of 961 taps
  CHECK(choose_on(gauss31, 3, 512, 512, kSm90H100, true, {}, CV_16U) == Variant::tensor);  // 786,432 elements
  CHECK(choose_on(gauss31, 4, 512, 512, kSm90H100, true, {}, CV_16U) == Variant::tensor);  // 1024^2 elements
  CHECK(choose_on(gauss31, 3, 724, 724, kSm90H100, true, {}, CV_16U) == Variant::fast);
  CHECK(choose_on(gauss15, 3, 512, 512, kSm90H100, true, {}, CV_16U) == Variant::fast);  // below 31 taps
  const Filter gauss23 = load_filter("gaussian:11,4");
  CHECK(choose_on(gauss23, 3, 512, 512, kSm90H100, true, {}, CV_16U) == Variant::fast);
  // One channel sums on the FP64 tensor cores: fast at every size (tensor took 31x31 up to 1024^2
  // and 15x15 to 29x29 from 896^2 to 1024^2 while it summed on the FMA units).
  CHECK(choose_on(gauss31, 1, 256, 256, kSm90H100, true, {}, CV_16U) == Variant::fast);  // 256 tiles of 961 taps
  CHECK(choose_on(gauss31, 1, 1024, 1024, kSm90H100, true, {}, CV_16U) == Variant::fast);
  CHECK(choose_on(gauss15, 1, 1024, 1024, kSm90H100, true, {}, CV_16U) == Variant::fast);
  CHECK(choose_on(gauss23, 1, 1024, 1024, kSm90H100, true, {}, CV_16U) == Variant::fast);
  CHECK(choose_on(gauss15, 1, 8192, 8192, kSm90H100, true, {}, CV_16U) == Variant::fast);
  CHECK(choose_on(gauss31, 1, 8192, 8192, kSm90H100, true, {}, CV_16U) == Variant::fast);
  // Unknown sizes, an alpha kept and filters below 15x15: fast, as before.
  CHECK(choose_on(gauss31, 3, 0, 0, kSm90H100, true, {}, CV_16U) == Variant::fast);
  ConvolveOptions alpha;
  alpha.keep_alpha = true;
  CHECK(choose_on(gauss31, 4, 128, 128, kSm90H100, true, alpha, CV_16U) == Variant::fast);
  const Filter gauss13 = load_filter("gaussian:6,2");
  CHECK(choose_on(gauss13, 3, 2048, 2048, kSm90H100, true, {}, CV_16U) == Variant::fast);  // 13x13: float sums
  // The rule measured on 9.0 only, and a row without it (the planted defect test_auto_fastest catches).
  CHECK(choose_on(gauss31, 3, 512, 512, gpu::tuning::kGeneric, true, {}, CV_16U) == Variant::fast);
  gpu::tuning::AutoTuning off = kSm90H100;
  off.u16_rank1_tensor_wide_max_elements = 0;
  CHECK(choose_on(gauss31, 3, 512, 512, off, true, {}, CV_16U) == Variant::fast);
}

TEST_CASE("auto: 16-bit 7x7 to 13x13 on mid-size images take tensor's digit sums on 9.0") {
  const Filter gauss7 = load_filter("gaussian:3,1.4");
  const Filter gauss9 = load_filter("gaussian:4,1.8");
  const Filter gauss5 = load_filter("gauss5");
  const Filter gauss11 = load_filter("gaussian:5,2");
  const Filter gauss13 = load_filter("gaussian:6,2.3");
  const Filter gauss13_photo = load_filter("gaussian:6,2.5");
  const Filter gauss15 = load_filter("gaussian:7,2.5");
  struct Case {
    const Filter& filter;
    int channels, width, height;
    Variant expected;
  };
  // From 512 x 768 elements up to 32768 a tap (1.6M at 7x7, 2.65M at 9x9, 3.96M at 11x11, 5.5M at
  // 13x13), 1 to 4 channels (h100-u16-mma-d4790fe, h100-u16-mid-7b99e70); unknown sizes, 5x5 and
  // 15x15: fast.
  const Case cases[] = {{gauss7, 1, 512, 512, Variant::fast},
                        {gauss7, 1, 512, 768, Variant::tensor},
                        {gauss7, 1, 1024, 1024, Variant::tensor},
                        {gauss7, 1, 1024, 49 * 32, Variant::tensor},
                        {gauss7, 1, 1024, 49 * 32 + 1, Variant::fast},
                        {gauss9, 1, 1448, 1448, Variant::tensor},
                        {gauss9, 1, 2048, 2048, Variant::fast},
                        {gauss9, 3, 512, 512, Variant::tensor},
                        {gauss9, 3, 256, 256, Variant::fast},
                        {gauss9, 3, 1024, 1024, Variant::fast},
                        {gauss7, 4, 512, 512, Variant::tensor},
                        {gauss7, 4, 1024, 1024, Variant::fast},
                        {gauss11, 1, 1024, 1024, Variant::tensor},
                        {gauss11, 1, 2048, 2048, Variant::fast},
                        {gauss11, 3, 1024, 1024, Variant::tensor},
                        {gauss11, 4, 1024, 1024, Variant::fast},
                        {gauss13, 1, 2048, 2048, Variant::tensor},
                        {gauss13_photo, 3, 512, 512, Variant::tensor},  // test_gpu_separable's photo
                        {gauss13, 1, 4096, 4096, Variant::fast},
                        {gauss13, 4, 1024, 1024, Variant::tensor},
                        {gauss13, 4, 2048, 2048, Variant::fast},
                        {gauss7, 1, 0, 0, Variant::fast},
                        {gauss5, 1, 1024, 1024, Variant::fast},
                        {gauss15, 3, 512, 512, Variant::fast}};
  for (const Case& c : cases) {
    CAPTURE(c.filter.width);
    CAPTURE(c.channels);
    CAPTURE(c.width);
    CAPTURE(c.height);
    CHECK(choose_on(c.filter, c.channels, c.width, c.height, gpu::tuning::kSm90H100, true, {}, CV_16U) == c.expected);
  }
  // Float images and other GPUs: as before.
  CHECK(choose_on(gauss7, 1, 1024, 1024, gpu::tuning::kSm90H100, true, {}, CV_32F) == Variant::fast);
  CHECK(choose_on(gauss7, 1, 1024, 1024, gpu::tuning::kGeneric, true, {}, CV_16U) == Variant::fast);
}
