// SPDX-License-Identifier: Apache-2.0
// A request never sees another's bytes: memory a decoder leaves unwritten reads as zeros, in a
// server (where the heap hands out what an earlier request used) as in a process of its own.
// No file is known that a decoder cuconv uses leaves part unwritten now (OpenCV 4.6 filled only
// one plane of a planar 16-bit RGB TIFF, which libtiff now reads whole; its BMP decoder fills the
// pixels RLE escapes skip), so the guarantee is checked on the heap itself (codec/zeroed_heap.hpp),
// and the served path end to end with that TIFF: the same bytes as in a process of its own.
#include "adversarial_files.hpp"
#include "test_support.hpp"

#include "codec/zeroed_heap.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using cuconv::test::run_cuconv;
using cuconv::test::TempDir;
using cuconv::test::crafted::planar_rgb16_tiff;

constexpr std::uint16_t kPlanarValue = 1000;  // every sample of the TIFF
constexpr std::uint16_t kSecret = 12345;      // every sample of the other request's image

/// How many values of `image` cannot come from the probe file: all its samples are kPlanarValue,
/// unwritten ones read 0, and a blur keeps them in that range. AddressSanitizer's allocator
/// ignores M_PERTURB and fills new blocks with 0xBE bytes, so under it only the other image's
/// value counts.
int foreign_values(const cv::Mat& image) {
  int count = 0;
  const cv::Mat flat = image.reshape(1);
  for (int r = 0; r < flat.rows; ++r)
    for (int c = 0; c < flat.cols; ++c) {
      const std::uint16_t v = flat.at<std::uint16_t>(r, c);
#if defined(__SANITIZE_ADDRESS__)
      count += v == kSecret;
#else
      count += v > kPlanarValue;
#endif
    }
  return count;
}

/// The probe's size: its plane buffer (6438 bytes) comes from the heap, not from the small-block
/// cache or the stack.
constexpr int kWidth = 37, kHeight = 29;

}  // namespace

TEST_CASE("served memory: a served planar TIFF gives the in-process bytes, none of another request's image") {
  TempDir dir;
  const cuconv::test::Server server(dir);
  const std::string planar = dir.file("planar16.tif"), own = dir.file("own.tif");
  std::ofstream(planar, std::ios::binary) << planar_rgb16_tiff(kWidth, kHeight, kPlanarValue);
  REQUIRE(cv::imwrite(dir.file("secret.png"), cv::Mat(kHeight, kWidth, CV_16UC3, cv::Scalar::all(kSecret))));
  const auto in_process = run_cuconv({"--server", "never", planar, own, "-f", "gauss5"});
  // Several rounds: the heap need not hand the freed image to the very next request.
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    const std::string a = dir.file("a" + std::to_string(round) + ".png");
    const std::string b = dir.file("b" + std::to_string(round) + ".tif");
    const auto first =
        run_cuconv({"--server", "always", dir.file("secret.png"), a, "-f", "gauss5"}, "", server.setup());
    REQUIRE_MESSAGE(first.exit_code == 0, first.err);
    const auto second = run_cuconv({"--server", "always", planar, b, "-f", "gauss5"}, "", server.setup());
    INFO("served: ", second.err, "\nin-process: ", in_process.err);
    CHECK(second.exit_code == in_process.exit_code);
    if (second.exit_code != 0) continue;  // refused, as in-process: nothing to leak
    const cv::Mat output = cv::imread(b, cv::IMREAD_UNCHANGED);
    REQUIRE(output.type() == CV_16UC3);
    CHECK(foreign_values(output) == 0);
    CHECK(cuconv::test::read_file(b) == cuconv::test::read_file(own));
  }
}

namespace {

/// `p` escapes to the compiler: the allocation and the writes to it are kept.
void escape(void* p) { asm volatile("" : : "r"(p) : "memory"); }

/// How many bytes of a new heap block of `size` hold the value a freed block of that size was
/// filled with, when `guard` is held around the allocation (glibc hands back the freed block).
template <typename Guard>
std::size_t secret_bytes_after_free(std::size_t size) {
  constexpr unsigned char kByte = 0x5A;
  auto* freed = static_cast<unsigned char*>(std::malloc(size));
  REQUIRE(freed != nullptr);
  std::memset(freed, kByte, size);
  escape(freed);
  std::free(freed);
  unsigned char* fresh = nullptr;
  {
    const Guard guard;
    fresh = static_cast<unsigned char*>(std::malloc(size));
    escape(fresh);
  }
  REQUIRE(fresh != nullptr);
  std::size_t count = 0;
  for (std::size_t i = 0; i < size; ++i) count += fresh[i] == kByte;
  std::free(fresh);
  return count;
}

struct NoGuard {};

}  // namespace

TEST_CASE("served memory: while a decoder runs, the heap hands out no bytes a freed image held") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("SKIPPED: AddressSanitizer's allocator ignores M_PERTURB (and fills new blocks with 0xBE itself)");
#else
  // The decoded probe's size: a block past glibc's per-thread cache (1032 bytes), which the guard
  // does not reach, and under the mmap threshold.
  constexpr std::size_t kBlock = 2ull * 3 * kWidth * kHeight;
  // The probe sees a leak: without the guard, the freed block comes back with its bytes.
  CHECK(secret_bytes_after_free<NoGuard>(kBlock) > kBlock / 2);
  CHECK(secret_bytes_after_free<cuconv::codec::ZeroedHeapWhileDecoding>(kBlock) == 0);
#endif
}
