// SPDX-License-Identifier: Apache-2.0
// cuconv_wide_tune: `fast`'s double-precision separable kernels for 16-bit images timed alone, as
// src/gpu/launch/launch_fast_wide.cu launches them (the FMA kernel, kernels/fast_wide.cuh, which
// the product runs on colour images; one channel's FP64-MMA kernel, kernels/fast_wide_mma.cuh),
// beside experimental forms of the FMA kernel and a device-to-device copy of the same bytes (the
// roof), on the 16-bit shapes of issue 64. Every form sums each output in the FMA kernel's order,
// so each must print its hash; four rows of its result (the first two, the middle, the last) are
// also summed again on the host in that order and compared bit for bit. Like
// cuconv_fast_tune it needs no OpenCV: `nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_90
// -I TREE -I TREE/include -I TREE/src bench/wide_tune.cu` builds it from any tree.
//   cuconv_wide_tune [CASE]   all cases, or the one whose label is CASE (e.g. "16U 15x15")
//   cuconv_wide_tune --check  the FP64-MMA kernel against the FMA kernel, bit for bit (see check_instance)
//   cuconv_wide_tune --rates  the FP64 tensor cores' rate by MMA shape (see mma_rates)
// What it measured: bench/results/kernel-notes/fast-wide.md (the FMA forms: none was faster
// where it matters; the FP64 tensor-core form, kernels/fast_wide_mma.cuh, in its last section).
#include <kernels/fast.cuh>
#include <kernels/fast_wide.cuh>
#include <kernels/fast_wide_mma.cuh>
#include <src/gpu/launch/fast_rules.cuh>
#include <src/gpu/launch/occupancy.cuh>
#include "tune_timing.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace cuconv::kernels {

/// Staged-row index with one slot of padding every 16 doubles: a half warp's loads of pixel
/// pairs (two pixels of a channel a thread) then fall on distinct bank pairs for 1 and 3 channels.
__device__ __forceinline__ int padded(int i) { return i + (i >> 4); }

/// Experimental form: each thread sums P outputs of one channel (pixels x .. x + P - 1, elements
/// C apart), so one staged row's K + P - 1 shared loads feed P outputs' K row taps each instead
/// of K loads an output. Block: kThreads threads over (kThreads / C) groups of P pixels; the
/// vertical sums as in fast_wide_kernel (a ring of K accumulators an output, the K-step loop
/// unrolled), in the same order, so the bits equal the FMA kernel's.
template <class In, class Out, int K, int P, int kThreads, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    wide_group_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, WideTaps<K> taps, int channels,
                      bool keep_alpha, int strip_rows) {
  constexpr int kSpanMax = P * kThreads + (K - 1) * kWideMaxChannels;
  constexpr int kPerThread = div_up(kSpanMax, kThreads);
  __shared__ double staged[2][kSpanMax + kSpanMax / 16 + 1];

  const int groups = kThreads / channels;
  const int block_elems = groups * P * channels;
  const int row_elems = src.width * channels;
  const int t = static_cast<int>(threadIdx.x);
  const bool active = t < groups * channels;
  const int local = (t / channels) * P * channels + t % channels;  // this thread's first output in the block
  const int e0 = static_cast<int>(blockIdx.x) * block_elems + local;
  const int first = static_cast<int>(blockIdx.x) * block_elems - p.anchor_x * channels;
  const int span = block_elems + (K - 1) * channels;
  int position[kPerThread];
#pragma unroll
  for (int q = 0; q < kPerThread; ++q) {
    const int i = t + q * kThreads;
    const int g = first + i;
    if (i >= span) {
      position[q] = -2;
    } else if (g >= 0 && g < row_elems) {
      position[q] = g;
    } else {
      const int x = g >= 0 ? g / channels : -((-g + channels - 1) / channels);
      const int xx = interpolate_border(x, src.width, p.border);
      position[q] = xx < 0 ? -1 : xx * channels + (g - x * channels);
    }
  }
  const In constant = static_cast<In>(p.border_value);
  In pending[kPerThread];
  const auto load_row = [&](int r) {
    const int yy = interpolate_border(r, src.height, p.border);
#pragma unroll
    for (int q = 0; q < kPerThread; ++q)
      pending[q] = position[q] == -2 ? In{} : (yy < 0 || position[q] < 0) ? constant : __ldg(src.row(yy) + position[q]);
  };
  const int strips = div_up(src.height, strip_rows);

  for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
    const int y0 = strip * strip_rows;
    const int y_end = min(y0 + strip_rows, src.height);
    const int steps = y_end - y0 + K - 1;
    const int r_first = y0 - p.anchor_y;
    double acc[P][K];
#pragma unroll
    for (int o = 0; o < P; ++o)
#pragma unroll
      for (int s = 0; s < K; ++s) acc[o][s] = taps.delta;
    load_row(r_first);
    for (int base = 0; base < steps; base += K) {
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const int n = base + s;
        if (n >= steps) break;
        double* row = staged[n & 1];
#pragma unroll
        for (int q = 0; q < kPerThread; ++q)
          if (position[q] != -2) row[padded(t + q * kThreads)] = static_cast<double>(pending[q]);
        __syncthreads();
        if (n + 1 < steps) load_row(r_first + n + 1);
        if (active) {
          double part[P][4];
#pragma unroll
          for (int o = 0; o < P; ++o) part[o][0] = part[o][1] = part[o][2] = part[o][3] = 0.0;
            // Value v feeds output o at tap v - o: each staged value read once for the P outputs.
#pragma unroll
          for (int v = 0; v < K + P - 1; ++v) {
            const double x = row[padded(local + v * channels)];
#pragma unroll
            for (int o = 0; o < P; ++o) {
              const int j = v - o;
              if (j >= 0 && j < K) part[o][j % 4] = fma(taps.horizontal[j], x, part[o][j % 4]);
            }
          }
#pragma unroll
          for (int o = 0; o < P; ++o) {
            const double h = (part[o][0] + part[o][1]) + (part[o][2] + part[o][3]);
#pragma unroll
            for (int i = 0; i < K; ++i) acc[o][(s - i + K) % K] = fma(taps.vertical[i], h, acc[o][(s - i + K) % K]);
          }
          const int done = (s + 1) % K;
          if (n >= K - 1) {
            const int y = y0 + n - (K - 1);
#pragma unroll
            for (int o = 0; o < P; ++o) {
              const int e = e0 + o * channels;
              if (e < row_elems) {
                const bool copies_alpha = keep_alpha && channels == 4 && e % 4 == 3;
                dst.row(y)[e] = copies_alpha ? static_cast<Out>(src.row(y)[e]) : round_clamp_double<Out>(acc[o][done]);
              }
            }
          }
#pragma unroll
          for (int o = 0; o < P; ++o) acc[o][done] = taps.delta;
        }
      }
    }
    __syncthreads();
  }
}

}  // namespace cuconv::kernels

namespace {

using namespace cuconv::kernels;
using cuconv::tune::median_ms;
using u16 = std::uint16_t;

const char* only_case = nullptr;

/// Normalised gaussian factors of a side of `k` taps (sigma as the bench's gaussian:R,SIGMA).
std::vector<double> gaussian(int k, double sigma) {
  std::vector<double> w(static_cast<std::size_t>(k));
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += w[static_cast<std::size_t>(i)] = std::exp(-0.5 * std::pow((i - k / 2) / sigma, 2));
  for (double& v : w) v /= sum;
  return w;
}

/// The FMA kernel's sums of output (x, y) on the host, in its order (reflect101 border, no
/// delta, anchor at the centre): four chains of row taps j mod 4, joined, then the vertical taps
/// in order from delta; rounded half to even and clamped.
u16 host_output(const std::vector<u16>& img, int width, int height, int channels, int x, int y, int c,
                const std::vector<double>& h, const std::vector<double>& v) {
  const int k = static_cast<int>(h.size());
  const auto reflect = [](int p, int len) {
    while (p < 0 || p >= len) p = p < 0 ? -p : 2 * len - 2 - p;
    return p;
  };
  double acc = 0.0;
  for (int i = 0; i < k; ++i) {
    const int yy = reflect(y - k / 2 + i, height);
    double part[4] = {0, 0, 0, 0};
    for (int j = 0; j < k; ++j) {
      const int xx = reflect(x - k / 2 + j, width);
      part[j % 4] =
          std::fma(h[static_cast<std::size_t>(j)],
                   static_cast<double>(img[(static_cast<std::size_t>(yy) * width + xx) * channels + c]), part[j % 4]);
    }
    acc = std::fma(v[static_cast<std::size_t>(i)], (part[0] + part[1]) + (part[2] + part[3]), acc);
  }
  return static_cast<u16>(std::clamp(std::nearbyint(acc), 0.0, 65535.0));
}

unsigned long long hash_of(const void* out, std::size_t pitch, std::size_t row_bytes, int height,
                           std::vector<u16>* keep = nullptr) {
  CUCONV_CUDA_TRY(cudaDeviceSynchronize());
  std::vector<unsigned char> result(row_bytes * height);
  CUCONV_CUDA_TRY(cudaMemcpy2D(result.data(), row_bytes, out, pitch, row_bytes, height, cudaMemcpyDeviceToHost));
  unsigned long long hash = 1469598103934665603ull;
  for (unsigned char byte : result) hash = (hash ^ byte) * 1099511628211ull;
  if (keep != nullptr) {
    keep->resize(result.size() / 2);
    std::copy(result.begin(), result.end(), reinterpret_cast<unsigned char*>(keep->data()));
  }
  return hash;
}

/// One case: a width x height 16-bit image of `channels` interleaved channels, a K x K gaussian.
template <int K>
void run_case(const char* label, int width, int height, int channels, double sigma) {
  if (only_case != nullptr && std::string(label) != only_case) return;
  const std::size_t row_bytes = static_cast<std::size_t>(width) * channels * sizeof(u16);
  void* in = nullptr;
  void* out = nullptr;
  std::size_t in_pitch = 0, out_pitch = 0;
  CUCONV_CUDA_TRY(cudaMallocPitch(&in, &in_pitch, row_bytes, height));
  CUCONV_CUDA_TRY(cudaMallocPitch(&out, &out_pitch, row_bytes, height));
  std::vector<u16> host(static_cast<std::size_t>(width) * channels * height);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<u16>((i * 2654435761u) >> 16);  // full range
  CUCONV_CUDA_TRY(cudaMemcpy2D(in, in_pitch, host.data(), row_bytes, row_bytes, height, cudaMemcpyHostToDevice));

  const std::vector<double> w = gaussian(K, sigma);
  WideTaps<K> taps{};
  for (int j = 0; j < K; ++j) taps.horizontal[j] = taps.vertical[j] = w[static_cast<std::size_t>(j)];
  taps.delta = 0.0;
  const ConvParams params{K, K, K / 2, K / 2, 0.0f, BorderRule::reflect101, 0.0f};
  const PlaneView<const u16> src{static_cast<const u16*>(in), in_pitch, width, height};
  const PlaneView<u16> dst{static_cast<u16*>(out), out_pitch, width, height};
  const int row_elems = width * channels;

  const float copy_ms =
      median_ms([&] { CUCONV_CUDA_TRY(cudaMemcpyAsync(out, in, in_pitch * height, cudaMemcpyDeviceToDevice)); });
  unsigned long long product_hash = 0;

  // Times one kernel form launched as launch_fast_wide.cu launches the FMA kernel, and hashes its result.
  const auto time_form = [&]<auto Kernel>(const char* form, int threads, int block_elems) {
    const int column_blocks = div_up(row_elems, block_elems);
    int sms = 0, per_sm = 0;
    CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, threads, 0));
    const int strip_rows = cuconv::gpu::strip_rows_for_warmup(height, column_blocks, std::max(1, sms * per_sm), K - 1);
    const dim3 grid = cuconv::gpu::strip_grid(column_blocks, height, strip_rows);
    const auto launch = [&] {
      Kernel<<<grid, dim3(threads), 0, nullptr>>>(src, dst, params, taps, channels, false, strip_rows);
      CUCONV_CUDA_TRY(cudaPeekAtLastError());
    };
    const float ms = median_ms(launch);
    CUCONV_CUDA_TRY(cudaMemset2D(out, out_pitch, 0xA5, row_bytes, height));
    launch();
    const bool product = product_hash == 0;
    std::vector<u16> result;
    const unsigned long long hash = hash_of(out, out_pitch, row_bytes, height, product ? &result : nullptr);
    if (product) {
      product_hash = hash;
      // The first two rows, the last row and a middle row summed again on the host, in the kernel's order.
      long long wrong = 0;
      for (int y : {0, 1, height / 2, height - 1})
        for (int x = 0; x < width; ++x)
          for (int c = 0; c < channels; ++c)
            wrong += result[(static_cast<std::size_t>(y) * width + x) * channels + c] !=
                     host_output(host, width, height, channels, x, y, c, w, w);
      std::printf("  host check of 4 rows: %lld values differ\n", wrong);
    }
    std::printf(
        "hash %016llx %s %-14s %-34s %5dx%-5d strip %4d %2d blocks/SM  kernel %8.4f ms  copy %8.4f ms  %5.1f%%\n", hash,
        hash == product_hash ? "same" : "DIFF", label, form, width, height, strip_rows, per_sm, ms, copy_ms,
        100.0f * copy_ms / ms);
  };
  const int pair_elems_256 = 256 / channels * 2 * channels;
  const int pair_elems_128 = 128 / channels * 2 * channels;
  time_form.template operator()<fast_wide_kernel<u16, u16, K>>("FMA kernel (256 threads, 1 output)", kWideThreads,
                                                               kWideThreads);
  // One channel: the FP64 tensor-core form (kernels/fast_wide_mma.cuh), as launch_fast_wide.cu
  // launches it, after the FMA kernel, whose hash it is compared with.
  if (channels == 1) {
    constexpr auto kernel = fast_wide_mma_kernel<K>;
    const int column_blocks = div_up(width, wide_mma_block_columns(K));
    int sms = 0, per_sm = 0;
    CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * kWideMmaWarps, 0));
    const int strip_rows = cuconv::gpu::strip_rows_for_warmup(height, column_blocks, std::max(1, sms * per_sm),
                                                              wide_mma_warmup_rows(K), kWideMmaTileRows);
    const dim3 grid = cuconv::gpu::strip_grid(column_blocks, height, strip_rows);
    const auto launch = [&] {
      kernel<<<grid, dim3(32 * kWideMmaWarps), 0, nullptr>>>(src, dst, params, taps, strip_rows);
      CUCONV_CUDA_TRY(cudaPeekAtLastError());
    };
    const float ms = median_ms(launch);
    CUCONV_CUDA_TRY(cudaMemset2D(out, out_pitch, 0xA5, row_bytes, height));
    launch();
    std::vector<u16> result;
    const unsigned long long hash = hash_of(out, out_pitch, row_bytes, height, &result);
    // Its order differs from the FMA kernel's: a value may differ only where the exact sum lies within
    // the double sums' error of a tie. Count the host-order values of 4 rows it differs from.
    long long wrong = 0;
    for (int y : {0, 1, height / 2, height - 1})
      for (int x = 0; x < width; ++x)
        wrong += result[static_cast<std::size_t>(y) * width + x] != host_output(host, width, height, 1, x, y, 0, w, w);
    std::printf("  host check of 4 rows (FP64 MMA): %lld values differ\n", wrong);
    std::printf(
        "hash %016llx %s %-14s %-34s %5dx%-5d strip %4d %2d blocks/SM  kernel %8.4f ms  copy %8.4f ms  %5.1f%%\n", hash,
        hash == product_hash ? "same" : "DIFF", label, "FP64 MMA (m8n8k4), 128 threads", width, height, strip_rows,
        per_sm, ms, copy_ms, 100.0f * copy_ms / ms);
  }
  time_form.template operator()<wide_group_kernel<u16, u16, K, 1, 256, 3>>("1 output, 256 thr, 3 blocks", 256,
                                                                           256 / channels * channels);
  time_form.template operator()<wide_group_kernel<u16, u16, K, 1, 256, 4>>("1 output, 256 thr, 4 blocks", 256,
                                                                           256 / channels * channels);
  time_form.template operator()<wide_group_kernel<u16, u16, K, 2, 256, 1>>("2 outputs, 256 thr", 256, pair_elems_256);
  time_form.template operator()<wide_group_kernel<u16, u16, K, 2, 128, 2>>("2 outputs, 128 thr, 2 blocks", 128,
                                                                           pair_elems_128);
  time_form.template operator()<wide_group_kernel<u16, u16, K, 2, 128, 3>>("2 outputs, 128 thr, 3 blocks", 128,
                                                                           pair_elems_128);
  if constexpr (K <= 9) {
    const int quad_elems_128 = 128 / channels * 4 * channels;
    time_form.template operator()<wide_group_kernel<u16, u16, K, 4, 128, 2>>("4 outputs, 128 thr, 2 blocks", 128,
                                                                             quad_elems_128);
    if (channels == 1) {  // what the product runs below 15 taps: `fast`'s dense float kernel (other bits)
      constexpr int R = K / 2;
      FilterTaps<K * K> dense{};
      for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j)
          dense.w[i * K + j] = static_cast<float>(w[static_cast<std::size_t>(i)] * w[static_cast<std::size_t>(j)]);
      constexpr auto kernel = fast_kernel<u16, u16, 1, R, false>;
      const int column_blocks = cuconv::gpu::fast_column_blocks<u16, R>(row_elems);
      int sms = 0, per_sm = 0;
      CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
      CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kFastThreads, 0));
      const int strip_rows = cuconv::gpu::fast_strip_rows_for<u16, R, false>(height, column_blocks, sms * per_sm);
      const dim3 grid(column_blocks, std::min(div_up(height, strip_rows), kMaxGridY));
      const SumRange range = cuconv::gpu::fast_sum_range<u16, R, false>(dense, 0.0f);
      const float ms = median_ms([&] {
        kernel<<<grid, dim3(kFastBlockX, kFastBlockY)>>>(src, dst, params, dense, false, true, strip_rows, range);
        CUCONV_CUDA_TRY(cudaPeekAtLastError());
      });
      std::printf("%-21s %-14s %-34s %5dx%-5d strip %4d %2d blocks/SM  kernel %8.4f ms  copy %8.4f ms  %5.1f%%\n", "",
                  label, "fast dense float (product today)", width, height, strip_rows, per_sm, ms, copy_ms,
                  100.0f * copy_ms / ms);
    }
  }
  CUCONV_CUDA_TRY(cudaFree(in));
  CUCONV_CUDA_TRY(cudaFree(out));
}

/// `--check`: the FP64-MMA kernel against the FMA kernel (the product's on colour images, GPU-tested)
/// on one channel, whole outputs compared, both poisoned first: every border, anchors at both
/// ends, a delta, rectangular filters (zero weights past kw or kh), sizes on the MMA kernel's tile
/// edges (8-row tiles, 128 or 64 columns a block, strips). Both sum in double; their results may
/// differ only where the exact sum lies within their bounds of a tie (none expected on random data).
template <int K>
long long check_instance(int& cases) {
  const std::pair<int, int> sizes[] = {{1, 1},   {7, 5},   {8, 8},     {9, 17},   {63, 40},   {64, 7},
                                       {65, 64}, {127, 9}, {128, 100}, {129, 33}, {300, 257}, {1001, 31}};
  const BorderRule borders[] = {BorderRule::reflect101, BorderRule::reflect, BorderRule::replicate,
                                BorderRule::constant, BorderRule::wrap};
  long long differing = 0;
  int index = 0;
  int sms = 0;
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (const auto& [width, height] : sizes) {
    const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(u16);
    void* in = nullptr;
    void* out_fma = nullptr;
    void* out_mma = nullptr;
    std::size_t in_pitch = 0, fma_pitch = 0, mma_pitch = 0;
    CUCONV_CUDA_TRY(cudaMallocPitch(&in, &in_pitch, row_bytes, height));
    CUCONV_CUDA_TRY(cudaMallocPitch(&out_fma, &fma_pitch, row_bytes, height));
    CUCONV_CUDA_TRY(cudaMallocPitch(&out_mma, &mma_pitch, row_bytes, height));
    std::vector<u16> host(static_cast<std::size_t>(width) * height);
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = static_cast<u16>(((i + 7919u * static_cast<unsigned>(K)) * 2654435761u) >> 16);
    CUCONV_CUDA_TRY(cudaMemcpy2D(in, in_pitch, host.data(), row_bytes, row_bytes, height, cudaMemcpyHostToDevice));
    for (const BorderRule border : borders) {
      for (int shape = 0; shape < 3; ++shape) {
        ++index;
        // Shapes: K x K centred; (K - 2) x K, anchor at the first column and row; K x (K - 2),
        // anchor at the last column and row, with a delta.
        const int kw = shape == 1 ? K - 2 : K;
        const int kh = shape == 2 ? K - 2 : K;
        const int ax = shape == 0 ? K / 2 : shape == 1 ? 0 : kw - 1;
        const int ay = shape == 0 ? K / 2 : shape == 1 ? 0 : kh - 1;
        const double delta = shape == 2 ? -3.25 : 0.0;
        const std::vector<double> h = gaussian(kw, 0.3 * kw + index % 3);
        const std::vector<double> v = gaussian(kh, 0.2 * kh + 1.0);
        WideTaps<K> taps{};
        for (int j = 0; j < kw; ++j) taps.horizontal[j] = h[static_cast<std::size_t>(j)];
        for (int i = 0; i < kh; ++i) taps.vertical[i] = v[static_cast<std::size_t>(i)];
        taps.delta = delta;
        const ConvParams params{kw, kh, ax, ay, static_cast<float>(delta), border, 40000.0f};
        const PlaneView<const u16> src{static_cast<const u16*>(in), in_pitch, width, height};
        int per_sm = 0;
        CUCONV_CUDA_TRY(cudaMemset2D(out_fma, fma_pitch, 0xA5, row_bytes, height));
        CUCONV_CUDA_TRY(cudaMemset2D(out_mma, mma_pitch, 0x5A, row_bytes, height));
        {
          constexpr auto kernel = fast_wide_kernel<u16, u16, K>;
          CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWideThreads, 0));
          const int columns = div_up(width, kWideThreads);
          const int strip_rows = cuconv::gpu::strip_rows_for_warmup(height, columns, sms * per_sm, K - 1);
          kernel<<<cuconv::gpu::strip_grid(columns, height, strip_rows), kWideThreads>>>(
              src, PlaneView<u16>{static_cast<u16*>(out_fma), fma_pitch, width, height}, params, taps, 1, false,
              strip_rows);
          CUCONV_CUDA_TRY(cudaPeekAtLastError());
        }
        {
          constexpr auto kernel = fast_wide_mma_kernel<K>;
          CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * kWideMmaWarps, 0));
          const int columns = div_up(width, wide_mma_block_columns(K));
          const int strip_rows = cuconv::gpu::strip_rows_for_warmup(height, columns, sms * per_sm,
                                                                    wide_mma_warmup_rows(K), kWideMmaTileRows);
          kernel<<<cuconv::gpu::strip_grid(columns, height, strip_rows), 32 * kWideMmaWarps>>>(
              src, PlaneView<u16>{static_cast<u16*>(out_mma), mma_pitch, width, height}, params, taps, strip_rows);
          CUCONV_CUDA_TRY(cudaPeekAtLastError());
        }
        std::vector<u16> a, b;
        hash_of(out_fma, fma_pitch, row_bytes, height, &a);
        hash_of(out_mma, mma_pitch, row_bytes, height, &b);
        long long here = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
          if (a[i] == b[i]) continue;
          if (here < 3)
            std::printf("  DIFF K %d %dx%d border %d shape %d at (%zu, %zu): FMA %u MMA %u\n", K, width, height,
                        static_cast<int>(border), shape, i % width, i / width, a[i], b[i]);
          ++here;
        }
        differing += here;
        ++cases;
      }
    }
    CUCONV_CUDA_TRY(cudaFree(in));
    CUCONV_CUDA_TRY(cudaFree(out_fma));
    CUCONV_CUDA_TRY(cudaFree(out_mma));
  }
  return differing;
}

/// `--rates`: the FP64 tensor cores' rate by MMA shape, each warp four independent accumulators
/// (no dependency stalls) over the same fragments, 8 blocks of 4 warps an SM. An H100 runs
/// m8n8k4, the shape of kernels/fast_wide_mma.cuh, at half m16n8k4's rate; the kernel forms that
/// took m16n8k4 were slower all the same (bench/results/kernel-notes/fast-wide.md).
template <bool M16>
__global__ void mma_rate_kernel(double* sink, int iterations) {
  double d[4][4] = {};
  const double a0 = 1e-9 * threadIdx.x, a1 = a0 + 1.0, b = 1.0 + threadIdx.x;
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if constexpr (M16) {
        asm volatile(
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
            : "+d"(d[j][0]), "+d"(d[j][1]), "+d"(d[j][2]), "+d"(d[j][3])
            : "d"(a0), "d"(a1), "d"(b));
      } else {
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                     : "+d"(d[j][0]), "+d"(d[j][1])
                     : "d"(a0), "d"(b));
      }
#endif
    }
  double total = 0.0;
  for (const auto& r : d) total += r[0] + r[1] + r[2] + r[3];
  if (total == 1.25) *sink = total;  // never true: keeps the sums live
}

void mma_rates() {
  int sms = 0, major = 0;
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) {  // the kernel's MMAs are compiled for 9.0 and up only: its times would be empty loops
    std::printf("rate: needs compute capability 9.0 or later\n");
    return;
  }
  double* sink = nullptr;
  CUCONV_CUDA_TRY(cudaMalloc(&sink, sizeof(double)));
  constexpr int kIterations = 4096;
  const auto rate = [&]<bool M16>(const char* shape, double fmas_per_mma) {
    const float ms = median_ms([&] {
      mma_rate_kernel<M16><<<8 * sms, 128>>>(sink, kIterations);
      CUCONV_CUDA_TRY(cudaPeekAtLastError());
    });
    const double fmas = fmas_per_mma * 4 * kIterations * 4.0 * 8 * sms;
    std::printf("rate %-8s %8.3f ms  %6.2f TFLOP/s\n", shape, ms, 2.0 * fmas / ms / 1e9);
  };
  rate.template operator()<false>("m8n8k4", 256.0);
  rate.template operator()<true>("m16n8k4", 512.0);
  CUCONV_CUDA_TRY(cudaFree(sink));
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc > 1 && std::string(argv[1]) == "--rates") {
    mma_rates();
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--check") {
    int cases = 0;
    const long long differing = check_instance<15>(cases) + check_instance<17>(cases) + check_instance<21>(cases) +
                                check_instance<25>(cases) + check_instance<31>(cases);
    std::printf("check: %d cases (K 15, 17, 21, 25, 31 x 12 sizes x 5 borders x 3 shapes), %lld values differ\n", cases,
                differing);
    return differing == 0 ? 0 : 2;
  }
  if (argc > 1) only_case = argv[1];
  run_case<15>("16U 15x15", 8192, 8192, 1, 2.5);
  run_case<31>("16U 31x31", 8192, 8192, 1, 5.0);
  run_case<7>("16U 7x7", 8192, 8192, 1, 1.4);
  run_case<9>("16U 9x9", 8192, 8192, 1, 1.8);
  run_case<15>("16U RGB 15x15", 8192, 8192, 3, 2.5);
  run_case<15>("16U RGBA 15x15", 4096, 4096, 4, 2.5);
  run_case<15>("16U 15x15 odd", 1001, 777, 1, 2.5);
  run_case<9>("16U RGB 9x9 odd", 333, 401, 3, 1.8);
  return 0;
} catch (const std::exception& e) {  // CUCONV_CUDA_TRY's errors: the call, file:line and CUDA's text
  std::fprintf(stderr, "wide_tune: %s\n", e.what());
  return 1;
}
