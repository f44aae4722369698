// SPDX-License-Identifier: Apache-2.0
// cuconv_wgmma_tune: times `tensor`'s warpgroup kernel (kernels/tensor_dense_wgmma.cuh) alone,
// launched as the product launches it (src/gpu/launch/tensor_wgmma_plan.cuh: the same tensor map and
// grid), on one-channel 8-bit images with random weight digits, and measures the throughput of its
// wgmma shape on its own. Like cuconv_fast_tune it needs no OpenCV, so a copy built from a changed
// tree (`nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_90a -I TREE -I TREE/include -I TREE/src
// TREE/bench/wgmma_tune.cu`) compares kernel variants on a GPU node before a full bundle.
// bench/results/kernel-notes/tensor-wgmma.md ("Where the time goes") keeps what it measured.
//   cuconv_wgmma_tune [CASE]   every kernel case, or the one whose label is CASE (e.g. "5x5 ax 2")
//   cuconv_wgmma_tune rate     back-to-back m64n48k32 wgmmas from the kernel's shared-memory
//                              layouts, 1 to 5 warpgroups an SM, nothing else; then m64n48k32
//                              and m64n24k32 with A from registers
//   GY=N cuconv_wgmma_tune     every launch with gridDim.y = N instead of the plan's
//   ODD=1 cuconv_wgmma_tune    adds cases on 1008 x 301 and 2048 x 777 images (edges, partial tiles)
// Each kernel line starts with a hash of the output (written over a poisoned buffer): two trees
// that print the same hashes computed the same bytes.
#include "gpu/launch/tensor_wgmma_plan.cuh"
#include "tune_timing.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace cuconv::kernels;

using cuconv::tune::median_ms;

using Kernel = void (*)(PlaneView<const std::uint8_t>, PlaneView<std::uint8_t>, ConvParams, TensorDenseTaps,
                        const CUtensorMap, bool);

/// The kernel for a square kh-row filter and anchor_x, as the launcher's table picks it.
template <int Kh>
Kernel kernel_for(int anchor_x) {
  return wgmma_shifted(anchor_x) ? tensor_dense_wgmma_kernel<Kh, true> : tensor_dense_wgmma_kernel<Kh, false>;
}
Kernel kernel_for(int kh, int anchor_x) {
  switch (kh) {
    case 3:
      return kernel_for<3>(anchor_x);
    case 5:
      return kernel_for<5>(anchor_x);
    case 9:
      return kernel_for<9>(anchor_x);
    case 15:
      return kernel_for<15>(anchor_x);
    case 17:
      return kernel_for<17>(anchor_x);
    default:
      return nullptr;
  }
}

struct Case {
  std::string label;
  int side;  ///< kw = kh
  int anchor_x;
  int width, height;
};

/// Times one case and prints its output hash, registers, blocks an SM and median.
void run_case(const Case& c, int grid_y) {
  const Kernel kernel = kernel_for(c.side, c.anchor_x);
  const int shared = wgmma_shared_bytes(c.side);
  CUCONV_CUDA_TRY(
      cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  cudaFuncAttributes attributes{};
  CUCONV_CUDA_TRY(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  int per_sm = 0;
  CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(kernel),
                                                                kWgmmaThreads, shared));

  // Rows of width bytes (a multiple of 16: the box copies' rule), pixels a hash of the position
  // with a flat band (rows 100-139) where neighbouring sums are equal.
  const std::size_t bytes = static_cast<std::size_t>(c.width) * c.height;
  std::vector<std::uint8_t> host(bytes);
  for (int y = 0; y < c.height; ++y)
    for (int x = 0; x < c.width; ++x)
      host[static_cast<std::size_t>(y) * c.width + x] =
          y >= 100 && y < 140 ? 77 : static_cast<std::uint8_t>((x * 2654435761u ^ y * 40503u) >> 13);
  TensorDenseTaps taps{};
  std::uint32_t state = 7;
  const auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  // Weights H = d0 + 256 d1 + 65536 d2 with high digits -1..2 and the scale 2^-(15 + ceil(log2 kh^2)):
  // sums of either sign around the pixels' range, so that the outputs are not saturated.
  for (int d = 0; d < 3; ++d)
    for (int k = 0; k < c.side * c.side; ++k)
      taps.digit[d][k] =
          static_cast<signed char>(d == 2 ? static_cast<int>(next() >> 30) - 1 : static_cast<int>(next() >> 24) - 128);
  int log2_taps = 0;
  while ((1 << log2_taps) < c.side * c.side) ++log2_taps;
  taps.scale = std::ldexp(1.0f, -15 - log2_taps);
  const ConvParams p{c.side, c.side, c.anchor_x, c.side / 2, 0.3f, BorderRule::reflect101, 0.0f};

  std::uint8_t *src = nullptr, *dst = nullptr;
  CUCONV_CUDA_TRY(cudaMalloc(&src, bytes));
  CUCONV_CUDA_TRY(cudaMalloc(&dst, bytes));
  CUCONV_CUDA_TRY(cudaMemcpy(src, host.data(), bytes, cudaMemcpyHostToDevice));
  CUCONV_CUDA_TRY(cudaMemset(dst, 0xA5, bytes));
  CUtensorMap map{};
  if (!cuconv::gpu::wgmma_source_map(map, src, static_cast<std::size_t>(c.width), c.width, c.height, c.side)) {
    std::printf("%-12s the driver cannot encode the tensor map\n", c.label.c_str());
    std::exit(1);
  }
  dim3 grid = cuconv::gpu::wgmma_grid(c.width, c.height);
  if (grid_y > 0) grid.y = static_cast<unsigned>(grid_y);
  const PlaneView<const std::uint8_t> in{src, static_cast<std::size_t>(c.width), c.width, c.height};
  const PlaneView<std::uint8_t> out{dst, static_cast<std::size_t>(c.width), c.width, c.height};
  const float ms = median_ms([&] {
    kernel<<<grid, kWgmmaThreads, static_cast<std::size_t>(shared)>>>(in, out, p, taps, map, true);
    CUCONV_CHECK_LAUNCH();
  });
  CUCONV_CUDA_TRY(cudaMemcpy(host.data(), dst, bytes, cudaMemcpyDeviceToHost));
  unsigned long long hash = 1469598103934665603ull;  // FNV-1a
  for (std::uint8_t byte : host) hash = (hash ^ byte) * 1099511628211ull;
  std::printf("hash %016llx %-12s %5dx%-5d grid %ux%u regs %3d smem %6d blocks/SM %d median %.4f ms\n", hash,
              c.label.c_str(), c.width, c.height, grid.x, grid.y, attributes.numRegs, shared, per_sm, ms);
  CUCONV_CUDA_TRY(cudaFree(src));
  CUCONV_CUDA_TRY(cudaFree(dst));
}

/// m64n48k32 and m64n24k32 (u8 x s8 -> s32) with A from registers (four words a thread: rows 16 w + g
/// and 16 w + g + 8, bytes 4 t .. 4 t + 3 of K 0-15 and of K 16-31), B from shared memory: the
/// shapes of a form of the kernel that was tried and not kept (bench/results/kernel-notes/tensor-wgmma.md), for the
/// rate.
__device__ __forceinline__ void wgmma_n48_registers(int (&acc)[24], const unsigned (&a)[4], std::uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n48k32.s32.u8.s8 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, {%24,%25,%26,%27}, "
      "%28, 1;\n"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]), "+r"(acc[6]), "+r"(acc[7]),
        "+r"(acc[8]), "+r"(acc[9]), "+r"(acc[10]), "+r"(acc[11]), "+r"(acc[12]), "+r"(acc[13]), "+r"(acc[14]),
        "+r"(acc[15]), "+r"(acc[16]), "+r"(acc[17]), "+r"(acc[18]), "+r"(acc[19]), "+r"(acc[20]), "+r"(acc[21]),
        "+r"(acc[22]), "+r"(acc[23])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_n24_registers(int (&acc)[12], const unsigned (&a)[4], std::uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n24k32.s32.u8.s8 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 1;\n"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]), "+r"(acc[6]), "+r"(acc[7]),
        "+r"(acc[8]), "+r"(acc[9]), "+r"(acc[10]), "+r"(acc[11])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
#else
  __trap();
#endif
}

/// Throughput probe: each block (one warpgroup) stages A as the kernel's column slabs and B as one
/// filter row's digits, then issues `groups` groups of 8 m64n48k32 wgmmas (A at slab i, shifted i
/// rows) into two alternating accumulator sets, waiting for all but the last group, as the kernel
/// does between column blocks. Thread 0 records the block's clock cycles. Form 0 is the kernel's
/// m64n48k32 from shared memory, 1 and 2 the m64n48k32 and m64n24k32 with A from registers.
template <int Form>
__global__ void __launch_bounds__(kWgmmaThreads) wgmma_rate_kernel(int groups, int* sink, long long* cycles) {
  using namespace wgmma_detail;
  __shared__ __align__(128) unsigned char a_slabs[kWgmmaBufferBytes];
  __shared__ __align__(128) unsigned char b_row[kWgmmaBBytes];
  for (int i = static_cast<int>(threadIdx.x); i < kWgmmaBufferBytes; i += kWgmmaThreads)
    a_slabs[i] = static_cast<unsigned char>(i * 7);
  for (int i = static_cast<int>(threadIdx.x); i < kWgmmaBBytes; i += kWgmmaThreads)
    b_row[i] = static_cast<unsigned char>(i * 3);
  fence_proxy_async();
  __syncthreads();
  const std::uint64_t a = descriptor(a_slabs, kWgmmaSlabBytes, 128);
  const std::uint64_t b = descriptor(b_row, kWgmmaBBytes / 2, 128);
  int acc[2][24] = {};
  int acc24[2][12] = {};
  unsigned registers[8][4];
  for (int i = 0; i < 8; ++i)
    for (int u = 0; u < 4; ++u) registers[i][u] = threadIdx.x * 0x01010101u + static_cast<unsigned>(4 * i + u);
  const long long start = clock64();
  for (int g = 0; g < groups; g += 2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      wgmma_fence();
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if constexpr (Form == 0)
          wgmma_u8s8_n48(acc[h], a + static_cast<unsigned>((i * kWgmmaSlabBytes + 16 * i) >> 4), b, true);
        if constexpr (Form == 1) wgmma_n48_registers(acc[h], registers[i], b);
        if constexpr (Form == 2) wgmma_n24_registers(acc24[h], registers[i], b);
      }
      wgmma_commit();
      wgmma_wait<1>();
    }
  }
  wgmma_wait<0>();
  const long long stop = clock64();
  int sum = 0;
  for (int k = 0; k < 24; ++k) sum += acc[0][k] + acc[1][k];
  for (int k = 0; k < 12; ++k) sum += acc24[0][k] + acc24[1][k];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
  if (threadIdx.x == 0) cycles[blockIdx.x] = stop - start;
}

void run_rate() {
  int device = 0, sms = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  constexpr int kGroups = 4000;
  constexpr const char* kForms[] = {"m64n48k32 u8.s8, A and B from shared memory", "m64n48k32 u8.s8, A from registers",
                                    "m64n24k32 u8.s8, A from registers"};
  for (int form = 0; form < 3; ++form) {
    for (int per_sm : {1, 2, 4, 5}) {
      const int blocks = sms * per_sm;
      int* sink = nullptr;
      long long* cycles = nullptr;
      CUCONV_CUDA_TRY(cudaMalloc(&sink, sizeof(int) * blocks * kWgmmaThreads));
      CUCONV_CUDA_TRY(cudaMalloc(&cycles, sizeof(long long) * blocks));
      const float ms = median_ms([&] {
        if (form == 0) wgmma_rate_kernel<0><<<blocks, kWgmmaThreads>>>(kGroups, sink, cycles);
        if (form == 1) wgmma_rate_kernel<1><<<blocks, kWgmmaThreads>>>(kGroups, sink, cycles);
        if (form == 2) wgmma_rate_kernel<2><<<blocks, kWgmmaThreads>>>(kGroups, sink, cycles);
        CUCONV_CHECK_LAUNCH();
      });
      std::vector<long long> host(static_cast<std::size_t>(blocks));
      CUCONV_CUDA_TRY(cudaMemcpy(host.data(), cycles, sizeof(long long) * blocks, cudaMemcpyDeviceToHost));
      double mean_cycles = 0;
      for (long long c : host) mean_cycles += static_cast<double>(c);
      mean_cycles /= blocks;
      const double per_sm_wgmmas = 8.0 * kGroups * per_sm;
      // The block clock counts SM cycles while the block runs; with one block an SM it also gives the
      // clock the SMs ran at.
      std::printf(
          "%s, %d warpgroup(s) an SM: %.2f ns an SM a wgmma (median %.3f ms), block clock %.1f cycles a "
          "wgmma, %.2f GHz\n",
          kForms[form], per_sm, 1e6 * ms / per_sm_wgmmas, ms, mean_cycles / per_sm_wgmmas, mean_cycles / (1e6 * ms));
      CUCONV_CUDA_TRY(cudaFree(sink));
      CUCONV_CUDA_TRY(cudaFree(cycles));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string only = argc > 1 ? argv[1] : "";
    if (only == "rate") {
      run_rate();
      return 0;
    }
    const int grid_y = std::getenv("GY") != nullptr ? std::atoi(std::getenv("GY")) : 0;
    std::vector<Case> cases = {{"3x3 ax 1", 3, 1, 16384, 16384},     {"5x5 ax 2", 5, 2, 16384, 16384},
                               {"5x5 ax 0", 5, 0, 16384, 16384},     {"9x9 ax 4", 9, 4, 16384, 16384},
                               {"15x15 ax 7", 15, 7, 16384, 16384},  {"17x17 ax 8", 17, 8, 16384, 16384},
                               {"17x17 ax 16", 17, 16, 16384, 16384}};
    if (std::getenv("ODD") != nullptr) {
      constexpr std::pair<int, int> kOdd[] = {{3, 1}, {5, 2}, {5, 0}, {15, 7}, {17, 8}};  // side, anchor_x
      for (const auto& [side, anchor] : kOdd) {
        const std::string label = std::to_string(side) + "x" + std::to_string(side) + " ax " + std::to_string(anchor);
        cases.push_back({label, side, anchor, 1008, 301});
        cases.push_back({label, side, anchor, 2048, 777});
      }
    }
    bool ran = false;
    for (const Case& c : cases) {
      if (!only.empty() && c.label != only) continue;
      run_case(c, grid_y);
      ran = true;
    }
    if (!ran) {
      std::fprintf(stderr, "wgmma_tune: no case labelled \"%s\"\n", only.c_str());
      return 2;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgmma_tune: %s\n", e.what());
    return 1;
  }
}
