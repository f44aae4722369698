// SPDX-License-Identifier: Apache-2.0
// GpuWorkspace (batch mode's per-thread buffers): a kept workspace must give exactly what a fresh
// call gives, whatever came through it before (larger or smaller images, other types, variants,
// strips), and stop allocating once it has seen the largest image. Outputs are poisoned on every
// run, so a stale plane or a staging chunk copied to the wrong rows fails the comparison.
#include "gpu/memory/host_copy_pool.hpp"
#include "gpu/seams.hpp"
#include "gpu_seams.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::kAllBorders;
using cuconv::test::random_filter;
using cuconv::test::random_image;
using cuconv::test::tested_gpu_variants;

namespace {

struct Case {
  int cols, rows, depth, channels;
  int k;               ///< k x k random dense filter
  int max_strip_rows;  ///< 0: whole image
};

// Shapes that alternate wide and tall (a kept plane must serve both without growing to their
// product), shrink after large ones (views smaller than the buffer), and exceed one staging
// chunk (4 MiB: 1531 x 1201 RGB 8U is 5.5 MB, the f32 one 7.4 MB), plus forced strips.
const Case kCases[] = {
    {1531, 1201, CV_8U, 3, 5, 0},  {17, 911, CV_32F, 1, 3, 0},   {911, 17, CV_16U, 4, 7, 0},
    {1201, 1531, CV_32F, 1, 3, 0}, {129, 65, CV_8U, 1, 15, 7},   {1, 1, CV_8U, 3, 3, 0},
    {300, 200, CV_16U, 3, 9, 64},  {257, 255, CV_32F, 4, 31, 0}, {1531, 1201, CV_8U, 3, 5, 0},
};

std::string describe(Variant variant, const Case& c, Border border) {
  return std::string(to_string(variant)) + " " + std::to_string(c.cols) + "x" + std::to_string(c.rows) + " depth " +
         std::to_string(c.depth) + " x" + std::to_string(c.channels) + " filter " + std::to_string(c.k) +
         " strips of " + std::to_string(c.max_strip_rows) + " " + std::string(to_string(border));
}

/// Runs every case through `workspace` and through fresh calls; returns the number compared.
/// `parallel_copies`: the workspace's calls stage uploads on the host copy pool's threads.
int run_all(GpuWorkspace& workspace, const std::vector<Variant>& variants, bool parallel_copies = false) {
  int compared = 0;
  int index = 0;
  for (Variant variant : variants) {
    for (const Case& c : kCases) {
      const Border border = kAllBorders[static_cast<std::size_t>(index++) % std::size(kAllBorders)];
      // The big images test the host's chunked staging; the kernels see nothing new there, so
      // only `fast` (batch mode's usual choice) takes them, and none under a sanitizer.
      const bool big = c.cols * c.rows > 1'000'000;
      if (big && (variant != Variant::fast || cuconv::test::sweep_stride() > 1)) continue;
      CAPTURE(describe(variant, c, border));
      const cv::Mat src = random_image(c.rows, c.cols, c.depth, c.channels, 1000 + static_cast<std::uint64_t>(index));
      const Filter filter = random_filter(c.k, c.k, 77 + static_cast<std::uint64_t>(c.k));
      ConvolveOptions options;
      options.variant = variant;
      options.border = border;
      options.border_value = 3.5;
      const cuconv::test::PoisonOutputs poisoned;
      const cuconv::test::MaxStripRows forced_strips(c.max_strip_rows);
      const ConvolveResult fresh = convolve(src, filter, options);
      options.parallel_host_copies = parallel_copies;
      const ConvolveResult kept = convolve(src, filter, options, workspace);
      CHECK(kept.variant_used == variant);
      CHECK(kept.strips == fresh.strips);
      CHECK(bit_equal(kept.image, fresh.image));
      ++compared;
    }
  }
  return compared;
}

/// The tested variants whose device memory is all workspace planes (fft's stream-ordered scratch
/// is not), for the --gpu-memory cases.
std::vector<Variant> workspace_memory_variants() {
  std::vector<Variant> variants = tested_gpu_variants();
  std::erase(variants, Variant::fft);
  return variants;
}

/// `variant` under a 96 KiB --gpu-memory limit, outputs poisoned.
ConvolveOptions limited_options(Variant variant) {
  ConvolveOptions options;
  options.variant = variant;
  const cuconv::test::PoisonOutputs poisoned;
  options.gpu_memory_limit = std::uint64_t{96} * 1024;
  return options;
}

}  // namespace

TEST_CASE("gpu workspace: a kept workspace gives fresh calls' results bit for bit, then stops allocating") {
  const std::vector<Variant> variants = tested_gpu_variants();
  GpuWorkspace workspace;
  const int compared = run_all(workspace, variants);
  CHECK(compared >= static_cast<int>(variants.size()) * 6);  // the six small cases run on every variant
  CHECK(workspace.device_bytes() > 0);
  CHECK(workspace.pinned_bytes() > 0);
  const std::uint64_t allocations = workspace.allocations();
  const std::uint64_t device_bytes = workspace.device_bytes();
  MESSAGE("first pass: " << allocations << " allocations, " << device_bytes << " device bytes, "
                         << workspace.pinned_bytes() << " pinned bytes");

  // The same images again: every buffer is large enough already.
  run_all(workspace, variants);
  CHECK(workspace.allocations() == allocations);
  CHECK(workspace.device_bytes() == device_bytes);

  // Its memory follows the largest image, not the count of images nor the product of the widest
  // row (911 x 4 x 16U: 7680 pitched bytes) and the tallest image (1531 rows), which would be
  // 2 x 11.8 MB: the largest planes are the f32 1201 x 1531 pair (5120-byte pitch), plus at most
  // 4 MiB of small per-channel planes and weights.
  const std::uint64_t largest_plane = 5120ull * 1531;
  CHECK(device_bytes <= 2 * largest_plane + (4ull << 20));

  // Small staging chunks: every image, strip and channel plane now goes through several chunks
  // (the default 4 MiB chunks leave most of them in one); results must not change.
  const std::size_t default_chunks = gpu::set_staging_chunk_bytes(3000);
  const gpu::HostCopyPool& pool = gpu::HostCopyPool::shared();
  const std::uint64_t jobs_before = pool.parallel_jobs();
  run_all(workspace, variants);
  CHECK(pool.parallel_jobs() == jobs_before);  // the option off: every copy on the caller
  // The same with the chunks copied by the host copy pool's threads (the Python package's way),
  // in many chunks and in the default ones; images of 256 KiB and more take them (the 257 x 255
  // four-channel float image on every variant, the large ones on fast).
  run_all(workspace, variants, true);
  const std::uint64_t jobs_small_chunks = pool.parallel_jobs();
  CHECK(jobs_small_chunks >= jobs_before + variants.size());
  gpu::set_staging_chunk_bytes(default_chunks);
  run_all(workspace, variants, true);
  CHECK(pool.parallel_jobs() >= jobs_small_chunks + variants.size());

  // A moved-from workspace starts afresh; the moved-to one keeps the buffers.
  GpuWorkspace moved = std::move(workspace);
  CHECK(moved.allocations() == allocations);
  const cv::Mat src = random_image(40, 50, CV_8U, 3, 5);
  ConvolveOptions options;
  options.variant = variants.front();
  const cuconv::test::PoisonOutputs poisoned;
  const Filter filter = random_filter(3, 3, 9);
  CHECK(bit_equal(convolve(src, filter, options, workspace).image, convolve(src, filter, options).image));
  CHECK(bit_equal(convolve(src, filter, options, moved).image, convolve(src, filter, options).image));
}

TEST_CASE("gpu workspace: held planes stay within --gpu-memory, and unused slots are freed when strips need them") {
  for (Variant variant : workspace_memory_variants()) {
    CAPTURE(std::string(to_string(variant)));
    GpuWorkspace workspace;
    const Filter filter = random_filter(5, 5, 3);
    ConvolveOptions options = limited_options(variant);

    // A limit that forces strips: the planes held must fit it, and the result is the fresh one.
    const cv::Mat big = random_image(300, 257, CV_8U, 4, 21);
    const ConvolveResult fresh = convolve(big, filter, options);
    const ConvolveResult kept = convolve(big, filter, options, workspace);
    CHECK(kept.strips > 1);
    CHECK(bit_equal(kept.image, fresh.image));
    const std::uint64_t held = workspace.device_bytes();
    CHECK(held <= options.gpu_memory_limit);

    // A one-channel image after the four-channel one, under the same limit. One that fits whole
    // beside the other channels' planes (6 of 8 for the planar variants) leaves them held, so a
    // batch of mixed channel counts stops reallocating; the total still fits the limit.
    const cv::Mat small = random_image(16, 50, CV_8U, 1, 22);
    const ConvolveResult small_kept = convolve(small, filter, options, workspace);
    CHECK(small_kept.strips == 1);
    CHECK(bit_equal(small_kept.image, convolve(small, filter, options).image));
    CHECK(workspace.device_bytes() == held);

    // One that needs strips: the other channels' planes are freed first, so it gets as few strips
    // as a fresh call (holding them aside would leave it fewer rows per strip).
    const cv::Mat tall = random_image(400, 257, CV_8U, 1, 23);
    const ConvolveResult tall_fresh = convolve(tall, filter, options);
    const ConvolveResult tall_kept = convolve(tall, filter, options, workspace);
    CHECK(tall_fresh.strips > 1);
    CHECK(tall_kept.strips == tall_fresh.strips);
    CHECK(bit_equal(tall_kept.image, tall_fresh.image));
    CHECK(workspace.device_bytes() <= options.gpu_memory_limit);
  }
}

TEST_CASE("gpu workspace: planes kept from an 8U->32F image and grown by a 32F one stay within --gpu-memory") {
  // The first image needs a small input plane and a large output plane; the second a mid-sized
  // pair. Growing the input slot while keeping the large output slot would hold 99840 bytes in
  // planes, over the 96 KiB limit that each image alone fits whole.
  for (Variant variant : workspace_memory_variants()) {
    CAPTURE(std::string(to_string(variant)));
    GpuWorkspace workspace;
    const Filter filter = random_filter(3, 3, 31);
    ConvolveOptions options = limited_options(variant);
    options.depth = Depth::f32;
    for (const cv::Mat& image : {random_image(40, 257, CV_8U, 1, 32), random_image(25, 257, CV_32F, 1, 33)}) {
      CAPTURE(image.depth());
      const ConvolveResult fresh = convolve(image, filter, options);
      const ConvolveResult kept = convolve(image, filter, options, workspace);
      CHECK(kept.strips == 1);
      CHECK(bit_equal(kept.image, fresh.image));
      CHECK(workspace.device_bytes() <= options.gpu_memory_limit);
    }
  }
}
