// SPDX-License-Identifier: Apache-2.0
// The NPP peer of cuconv_bench: nppiFilterBorder on the same image shapes and filter sizes, timed
// the same way (median of CUDA events after warm-up) next to a device-to-device copy of the same
// bytes measured in the same process. Standalone (CUDA + NPP only), because NPP ships with the
// CUDA toolkit of GPU nodes but not with Debian's packages: scripts/gpu-check.sh builds it there
// with nvcc (CMake does not build it).
//
//   npp_peer [--reps R] > npp.jsonl      (one JSON object per line)
#include "peer_timing.hpp"

#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using peer::check;
using peer::time_median_ms;

/// Element type of an image, which picks the nppiFilterBorder function.
enum class Element { u8, u16, f32 };

/// One image shape: `width` x `height` pixels of `channels` interleaved elements.
struct Shape {
  const char* image;
  int width;
  int height;
  int channels;
  Element element;
};

std::size_t element_bytes(Element e) { return e == Element::f32 ? 4 : e == Element::u16 ? 2 : 1; }

}  // namespace

int main(int argc, char** argv) {
  peer::program = "npp_peer";
  int reps = 30;
  // --only IMAGE SIZE FILTER runs one case (e.g. for ncu: --only "8U 1ch" 4096 3); SIZE is the
  // image's width (--only "8U RGB" 6000 3 for the 6000x4000 frame).
  const char* only_image = nullptr;
  int only_size = 0, only_filter = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--only") == 0) {
      if (i + 3 >= argc) {
        std::fprintf(stderr, "npp_peer: --only needs IMAGE SIZE FILTER, e.g. --only \"8U 1ch\" 4096 3\n");
        return 2;
      }
      only_image = argv[++i];
      only_size = std::atoi(argv[++i]);
      only_filter = std::atoi(argv[++i]);
    }
  }

  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  NppStreamContext ctx{};
  int device = 0;
  cudaDeviceProp prop{};
  check(cudaGetDevice(&device), "device");
  check(cudaGetDeviceProperties(&prop, device), "props");
  ctx.hStream = stream;
  ctx.nCudaDeviceId = device;
  ctx.nMultiProcessorCount = prop.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = prop.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = prop.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = prop.minor;
  check(cudaStreamGetFlags(stream, &ctx.nStreamFlags), "flags");

  // cuconv_bench's shapes; 8U RGB 6000x4000 is a 24-megapixel camera frame.
  const Shape shapes[] = {{"f32 1ch", 4096, 4096, 1, Element::f32},   {"f32 1ch", 8192, 8192, 1, Element::f32},
                          {"f32 1ch", 16384, 16384, 1, Element::f32}, {"8U 1ch", 4096, 4096, 1, Element::u8},
                          {"8U 1ch", 16384, 16384, 1, Element::u8},   {"8U RGB", 4096, 4096, 3, Element::u8},
                          {"8U RGB", 8192, 8192, 3, Element::u8},     {"8U RGB", 16384, 16384, 3, Element::u8},
                          {"8U RGB", 6000, 4000, 3, Element::u8},     {"16U 1ch", 8192, 8192, 1, Element::u16},
                          {"16U RGB", 8192, 8192, 3, Element::u16}};
  const int filter_sizes[] = {3, 5, 9, 15, 31};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> weight(-0.3f, 1.0f);

  for (const Shape& s : shapes) {
    if (only_image != nullptr && (std::strcmp(only_image, s.image) != 0 || only_size != s.width)) continue;
    std::size_t pitch = 0;
    void* in = nullptr;
    void* out = nullptr;
    const std::size_t row_bytes = static_cast<std::size_t>(s.width) * s.channels * element_bytes(s.element);
    check(cudaMallocPitch(&in, &pitch, row_bytes, s.height), "malloc");
    check(cudaMallocPitch(&out, &pitch, row_bytes, s.height), "malloc");
    check(cudaMemset2D(in, pitch, 0x3c, row_bytes, s.height), "memset");  // contents do not change NPP's time
    const double bytes = 2.0 * static_cast<double>(row_bytes) * s.height;
    // The copy moves the image's rows without the pitch's padding (the same bytes as cuconv_bench's roof).
    const std::size_t copy_bytes = row_bytes * static_cast<std::size_t>(s.height);
    const double copy_ms = time_median_ms(
        reps, stream, [&] { check(cudaMemcpyAsync(out, in, copy_bytes, cudaMemcpyDeviceToDevice, stream), "copy"); });
    // "size" is the width (the side of square images), as in cuconv_bench's results.
    std::printf(
        "{\"image\":\"%s\",\"size\":%d,\"width\":%d,\"height\":%d,\"filter\":0,\"variant\":\"copy (npp_peer)\","
        "\"median_ms\":%.5f,\"gbps\":%.1f}\n",
        s.image, s.width, s.width, s.height, copy_ms, bytes / copy_ms * 1e-6);
    for (int k : filter_sizes) {
      if (only_image != nullptr && k != only_filter) continue;
      std::vector<float> host_kernel(static_cast<std::size_t>(k) * k);
      for (float& w : host_kernel) w = weight(rng) / (k * k);
      float* kernel = nullptr;
      check(cudaMalloc(&kernel, host_kernel.size() * sizeof(float)), "malloc");
      check(cudaMemcpy(kernel, host_kernel.data(), host_kernel.size() * sizeof(float), cudaMemcpyHostToDevice),
            "upload");
      const NppiSize size{s.width, s.height};
      const NppiSize ksize{k, k};
      const NppiPoint offset{0, 0};
      const NppiPoint anchor{k / 2, k / 2};
      NppStatus status = NPP_SUCCESS;
      const double ms = time_median_ms(reps, stream, [&] {
        if (s.element == Element::f32)
          status = nppiFilterBorder_32f_C1R_Ctx(static_cast<const Npp32f*>(in), static_cast<int>(pitch), size, offset,
                                                static_cast<Npp32f*>(out), static_cast<int>(pitch), size, kernel, ksize,
                                                anchor, NPP_BORDER_REPLICATE, ctx);
        else if (s.element == Element::u16 && s.channels == 3)
          status = nppiFilterBorder32f_16u_C3R_Ctx(static_cast<const Npp16u*>(in), static_cast<int>(pitch), size,
                                                   offset, static_cast<Npp16u*>(out), static_cast<int>(pitch), size,
                                                   kernel, ksize, anchor, NPP_BORDER_REPLICATE, ctx);
        else if (s.element == Element::u16)
          status = nppiFilterBorder32f_16u_C1R_Ctx(static_cast<const Npp16u*>(in), static_cast<int>(pitch), size,
                                                   offset, static_cast<Npp16u*>(out), static_cast<int>(pitch), size,
                                                   kernel, ksize, anchor, NPP_BORDER_REPLICATE, ctx);
        else if (s.channels == 1)
          status = nppiFilterBorder32f_8u_C1R_Ctx(static_cast<const Npp8u*>(in), static_cast<int>(pitch), size, offset,
                                                  static_cast<Npp8u*>(out), static_cast<int>(pitch), size, kernel,
                                                  ksize, anchor, NPP_BORDER_REPLICATE, ctx);
        else
          status = nppiFilterBorder32f_8u_C3R_Ctx(static_cast<const Npp8u*>(in), static_cast<int>(pitch), size, offset,
                                                  static_cast<Npp8u*>(out), static_cast<int>(pitch), size, kernel,
                                                  ksize, anchor, NPP_BORDER_REPLICATE, ctx);
      });
      check(cudaFree(kernel), "free");
      std::printf(
          "{\"image\":\"%s\",\"size\":%d,\"width\":%d,\"height\":%d,\"filter\":%d,\"variant\":\"npp\","
          "\"npp_status\":%d,\"median_ms\":%.5f,\"gbps\":%.1f,\"roof_percent\":%.1f}\n",
          s.image, s.width, s.width, s.height, k, static_cast<int>(status), ms, bytes / ms * 1e-6,
          100.0 * copy_ms / ms);
      std::fflush(stdout);
    }
    check(cudaFree(in), "free");
    check(cudaFree(out), "free");
  }
  return 0;
}
