// SPDX-License-Identifier: Apache-2.0
// cuconv_fast_tune: times the `fast` kernel alone, launched as the product launches it, on the
// image and filter shapes of the fast-path targets, each beside a device-to-device copy of the
// same bytes (the roof). It needs no OpenCV, so a copy of it built from a changed tree (its
// kernels/ and src/gpu/launch/fast_rules.cuh: `nvcc -std=c++20 --expt-relaxed-constexpr -I TREE
// -I TREE/include`) runs on any GPU node: the quick way to compare kernel variants before a full
// bundle. bench/results/kernel-notes/fast.md keeps what it measured for each rule.
//   cuconv_fast_tune [CASE]     all cases, or the one whose label is CASE (e.g. "u8 3x3")
//   STRIP=N cuconv_fast_tune    every launch walks N-row strips instead of fast_strip_rows_for's
//   ODD=1 cuconv_fast_tune      adds small cases of odd sizes (partial warps, border paths,
//                               strips below a wave) and 2048^2 / 4096^2 ones
//   PITCH_PAD=N cuconv_fast_tune  rows N bytes further apart than cudaMallocPitch puts them
//   SMALL=1 cuconv_fast_tune    adds 64^2 to 512^2 images (the Python package's small calls)
//   REPEAT=N cuconv_fast_tune   times N launches back to back and prints the time of one (small
//                               kernels: without the launch latency a lone launch's events include)
//   TILE=1 cuconv_fast_tune     after each dense case of at most 15x15 and 4096 tiles, the same
//                               case on fast_tile_kernel ("tile"; the product takes it where
//                               fast_tile_applies), forced: its hash must equal the case's; with
//                               SMALL=1 also the tile kernel alone at 17x17 .. 31x31, 16-4096 tiles;
//                               where it sums two rows a thread also its one-row form (same hash),
//                               on 16-bit images also its double sums
// Each line starts with a hash of the case's output (written over a poisoned buffer): two kernel
// trees that print the same hashes computed the same bytes.
#include <kernels/fast.cuh>
#include <kernels/fast_tile.cuh>
#include <src/gpu/launch/fast_rules.cuh>
#include "tune_timing.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace cuconv::kernels;
using cuconv::gpu::fast_column_blocks;
using cuconv::gpu::fast_strip_rows_for;
using cuconv::gpu::fast_sum_range;
using cuconv::tune::median_ms;

const char* only_case = nullptr;

/// The median time (ms) of one of REPEAT launches of `run` back to back (1 without REPEAT).
template <class Run>
float launch_ms(const Run& run) {
  const char* repeat_text = std::getenv("REPEAT");
  const int repeat = repeat_text != nullptr ? std::max(1, std::atoi(repeat_text)) : 1;
  return median_ms([&] {
           for (int i = 0; i < repeat; ++i) run();
         }) /
         static_cast<float>(repeat);
}

/// A case's images: a width x height source of Channels interleaved T with varied pixels (a hash
/// of the position, in the range of 8-bit images) and a result image of the same shape, rows
/// PITCH_PAD bytes further apart than cudaMallocPitch puts them where that is set; and the
/// (2R+1)^2 filter's parameters.
template <class T, int Channels, int Radius>
struct TuneImages {
  static constexpr int K = 2 * Radius + 1;
  int width, height;
  std::size_t row_bytes;
  void* in = nullptr;
  void* out = nullptr;
  std::size_t in_pitch = 0, out_pitch = 0;
  ConvParams params{K, K, Radius, Radius, 0.0f, BorderRule::reflect101, 0.0f};

  TuneImages(int w, int h) : width(w), height(h), row_bytes(static_cast<std::size_t>(w) * Channels * sizeof(T)) {
    CUCONV_CUDA_TRY(cudaMallocPitch(&in, &in_pitch, row_bytes, height));
    CUCONV_CUDA_TRY(cudaMallocPitch(&out, &out_pitch, row_bytes, height));
    if (const char* pad = std::getenv("PITCH_PAD")) {
      CUCONV_CUDA_TRY(cudaFree(in));
      CUCONV_CUDA_TRY(cudaFree(out));
      in_pitch += std::strtoul(pad, nullptr, 10);
      out_pitch = in_pitch;
      CUCONV_CUDA_TRY(cudaMalloc(&in, in_pitch * height));
      CUCONV_CUDA_TRY(cudaMalloc(&out, out_pitch * height));
    }
    std::vector<T> host(in_pitch / sizeof(T) * height);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<T>(((i * 2654435761u) >> 13) % 251);
    CUCONV_CUDA_TRY(cudaMemcpy(in, host.data(), in_pitch * height, cudaMemcpyHostToDevice));
  }
  TuneImages(const TuneImages&) = delete;
  TuneImages& operator=(const TuneImages&) = delete;
  ~TuneImages() {  // never throws: a failed free is only reported
    const cudaError_t freed_in = cudaFree(in);
    const cudaError_t freed_out = cudaFree(out);
    if (freed_in != cudaSuccess || freed_out != cudaSuccess) std::fprintf(stderr, "cudaFree failed\n");
  }
  PlaneView<const T> src() const { return {static_cast<const T*>(in), in_pitch, width, height}; }
  PlaneView<T> dst() const { return {static_cast<T*>(out), out_pitch, width, height}; }
  /// Taps of nearly equal weights summing to about one (kTaps of them: 2K separable, K^2 dense).
  template <int kTaps, bool Separable>
  static FilterTaps<kTaps> taps() {
    FilterTaps<kTaps> t{};
    for (int i = 0; i < kTaps; ++i) t.w[i] = (1.0f + 0.01f * static_cast<float>(i % 3)) / (Separable ? K : K * K);
    return t;
  }
  /// FNV-1a hash of the result rows `run` writes over 0xA5 bytes.
  template <class Run>
  unsigned long long output_hash(const Run& run) const {
    CUCONV_CUDA_TRY(cudaMemset2D(out, out_pitch, 0xA5, row_bytes, height));
    run();
    CUCONV_CUDA_TRY(cudaDeviceSynchronize());
    std::vector<unsigned char> result(row_bytes * height);
    CUCONV_CUDA_TRY(cudaMemcpy2D(result.data(), row_bytes, out, out_pitch, row_bytes, height, cudaMemcpyDeviceToHost));
    unsigned long long hash = 1469598103934665603ull;
    for (unsigned char byte : result) hash = (hash ^ byte) * 1099511628211ull;
    return hash;
  }
  /// fast_tile_kernel on these images with `taps` (dense K^2), Rows output rows a thread (the
  /// product's count by default): its grid and a launch.
  dim3 tile_grid() const { return dim3(div_up(width * Channels, kFastTileW), div_up(height, kFastTileH)); }
  template <class Acc = float, int Rows = fast_tile_rows_per_thread(K)>
  void launch_tile(const FilterTaps<K * K>& taps) const {
    TileTaps<Acc, K * K> tile_taps{};
    for (int t = 0; t < K * K; ++t) tile_taps.w[t] = taps.w[t];
    tile_taps.delta = params.delta;
    fast_tile_kernel<T, T, Radius, Acc, Rows>
        <<<tile_grid(), dim3(kFastTileW, kFastTileH)>>>(src(), dst(), params, tile_taps, Channels, false);
    CUCONV_CUDA_TRY(cudaPeekAtLastError());
  }
  /// The product's tile kernel and, where it sums two rows a thread, the one-row form: hash (the
  /// same for both) and time of each; 16-bit images also the double sums (the product's from
  /// 15x15 on rank-1 filters; another hash).
  void print_tile_forms(const FilterTaps<K * K>& taps, const char* label, const char* what) const {
    const dim3 tiles = tile_grid();
    const auto print = [&](const auto& run, const char* form) {
      std::printf("hash %016llx %-20s %5dx%-5d %-14s grid %3ux%-4u (%5u tiles)  kernel %8.4f ms\n", output_hash(run),
                  label, width, height, form, tiles.x, tiles.y, tiles.x * tiles.y, launch_ms(run));
    };
    print([&] { launch_tile(taps); }, what);
    if constexpr (fast_tile_rows_per_thread(K) != 1) print([&] { launch_tile<float, 1>(taps); }, "tile, 1 row");
    if constexpr (sizeof(T) == 2) print([&] { launch_tile<double>(taps); }, "tile, double");
  }
};

/// One case: a width x height image of Channels interleaved T, a (2R+1)^2 filter.
template <class T, int Channels, int Radius, bool Separable>
void run_case(const char* label, int width, int height) {
  if (only_case != nullptr && std::string(label) != only_case) return;
  using Images = TuneImages<T, Channels, Radius>;
  constexpr int K = Images::K;
  constexpr int kTaps = Separable ? 2 * K : K * K;
  const Images images(width, height);
  const FilterTaps<kTaps> taps = Images::template taps<kTaps, Separable>();

  // The launch of src/gpu/launch/launch_fast.cuh (which needs the product's headers, OpenCV's among them).
  const auto kernel = fast_kernel<T, T, Channels, Radius, Separable>;
  const int column_blocks = fast_column_blocks<T, Radius>(width * Channels);
  int sms = 0, per_sm = 0;
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kFastThreads, 0));
  const char* forced = std::getenv("STRIP");
  const int strip_rows = forced != nullptr
                             ? std::atoi(forced)
                             : fast_strip_rows_for<T, Radius, Separable>(height, column_blocks, sms * per_sm);
  const dim3 block(kFastBlockX, kFastBlockY);
  const dim3 grid(column_blocks, std::min(div_up(height, strip_rows), kMaxGridY));

  const SumRange sum_range = fast_sum_range<T, Radius, Separable>(taps, images.params.delta);
  const auto launch = [&] {
    kernel<<<grid, block>>>(images.src(), images.dst(), images.params, taps, false, true, strip_rows, sum_range);
    CUCONV_CUDA_TRY(cudaPeekAtLastError());
  };
  const float kernel_ms = launch_ms(launch);
  const float copy_ms = median_ms([&] {
    CUCONV_CUDA_TRY(cudaMemcpyAsync(images.out, images.in, images.in_pitch * height, cudaMemcpyDeviceToDevice));
  });
  std::printf("hash %016llx ", images.output_hash(launch));
  std::printf(
      "%-16s %5dx%-5d strip %4d grid %3dx%-4d %2d blocks/SM  kernel %8.4f ms  copy %8.4f ms  %5.1f%% of the copy "
      "roof\n",
      label, width, height, strip_rows, column_blocks, static_cast<int>(grid.y), per_sm, kernel_ms, copy_ms,
      100.0f * copy_ms / kernel_ms);
  // The tile kernel on the same case (dense filters of at most 15x15, at most 4096 tiles: past
  // fast_tile_applies' counts, to see where its rule should stop).
  if constexpr (!Separable && Radius <= 7) {
    const dim3 tiles = images.tile_grid();
    if (std::getenv("TILE") != nullptr && static_cast<long long>(tiles.x) * tiles.y <= 4096)
      images.print_tile_forms(taps, label, "tile");
  }
}

/// The tile kernel alone on a width x height image of Channels interleaved T and a dense
/// (2R+1)^2 filter: radii past fast_kernel's unrolled list (the generic kernel sums those
/// elsewhere), at tile counts past fast_tile_applies', to see where its rule should stop.
template <class T, int Channels, int Radius>
void run_tile_case(const char* label, int width, int height) {
  if (only_case != nullptr && std::string(label) != only_case) return;
  using Images = TuneImages<T, Channels, Radius>;
  constexpr int K = Images::K;
  const Images images(width, height);
  const FilterTaps<K* K> taps = Images::template taps<K * K, false>();
  images.print_tile_forms(taps, label, "tile only");
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc > 1) only_case = argv[1];
  run_case<float, 1, 1, false>("f32 3x3", 16384, 16384);
  run_case<float, 1, 2, false>("f32 5x5", 16384, 16384);
  run_case<float, 1, 3, false>("f32 7x7", 16384, 16384);
  run_case<float, 1, 4, false>("f32 9x9", 16384, 16384);
  run_case<float, 1, 7, false>("f32 15x15", 16384, 16384);
  run_case<float, 1, 7, true>("f32 sep 15x15", 16384, 16384);
  run_case<float, 1, 15, true>("f32 sep 31x31", 16384, 16384);
  run_case<float, 1, 1, false>("f32 3x3 4k", 4096, 4096);
  run_case<float, 1, 7, false>("f32 15x15 4k", 4096, 4096);
  run_case<std::uint8_t, 1, 1, false>("u8 3x3", 16384, 16384);
  run_case<std::uint8_t, 1, 2, false>("u8 5x5", 16384, 16384);
  run_case<std::uint8_t, 1, 7, false>("u8 15x15", 16384, 16384);
  run_case<std::uint8_t, 3, 1, false>("u8 rgb 3x3", 8192, 8192);
  run_case<std::uint8_t, 3, 2, false>("u8 rgb 5x5", 8192, 8192);
  run_case<std::uint8_t, 3, 4, false>("u8 rgb 9x9", 8192, 8192);
  run_case<std::uint8_t, 3, 7, false>("u8 rgb 15x15", 8192, 8192);
  run_case<std::uint8_t, 3, 7, false>("u8 rgb 15x15 4k", 4096, 4096);
  run_case<std::uint8_t, 3, 1, false>("u8 rgb 3x3 24mp", 6000, 4000);  // a camera frame (issue 26)
  if (std::getenv("ODD") != nullptr) {
    run_case<float, 1, 1, false>("f32 3x3 odd", 1001, 777);
    run_case<float, 1, 7, true>("f32 sep 15x15 odd", 1001, 777);
    run_case<float, 1, 4, false>("f32 9x9 odd", 517, 13);
    run_case<std::uint8_t, 1, 1, false>("u8 3x3 odd", 1003, 779);
    run_case<std::uint8_t, 3, 2, false>("u8 rgb 5x5 odd", 1001, 9);
    run_case<std::uint8_t, 3, 7, false>("u8 rgb 15x15 odd", 333, 401);
    run_case<std::uint8_t, 1, 2, false>("u8 5x5 tiny", 3, 5);
    run_case<float, 1, 7, false>("f32 15x15 tiny", 7, 2);
    run_case<std::uint8_t, 1, 1, false>("u8 3x3 4k", 4096, 4096);
    run_case<std::uint8_t, 3, 1, false>("u8 rgb 3x3 2k", 2048, 2048);
    run_case<float, 1, 2, false>("f32 5x5 2k", 2048, 2048);
    run_case<float, 1, 7, true>("f32 sep 15x15 2k", 2048, 2048);
    run_case<float, 1, 4, false>("f32 9x9 2k", 2048, 2048);
    run_case<float, 1, 4, false>("f32 9x9 4k", 4096, 4096);
    run_case<float, 1, 7, true>("f32 sep 15x15 4k", 4096, 4096);
    run_case<float, 1, 15, true>("f32 sep 31x31 4k", 4096, 4096);
    run_case<float, 1, 7, true>("f32 sep 15x15 8k", 8192, 8192);
    run_case<float, 1, 7, false>("f32 15x15 8k", 8192, 8192);
    run_case<std::uint8_t, 1, 7, false>("u8 15x15 4k", 4096, 4096);
    run_case<std::uint8_t, 3, 4, false>("u8 rgb 9x9 4k", 4096, 4096);
    run_case<std::uint8_t, 1, 2, false>("u8 5x5 4k", 4096, 4096);
    run_case<std::uint8_t, 3, 2, false>("u8 rgb 5x5 4k", 4096, 4096);
    run_case<float, 1, 2, false>("f32 5x5 4k", 4096, 4096);
    run_case<std::uint8_t, 3, 1, false>("u8 rgb 3x3 4k", 4096, 4096);
    run_case<std::uint8_t, 1, 1, false>("u8 3x3 8k", 8192, 8192);
    run_case<std::uint8_t, 1, 2, false>("u8 5x5 8k", 8192, 8192);
  }
  if (std::getenv("SMALL") != nullptr) {
    run_case<float, 1, 1, false>("f32 3x3 64", 64, 64);
    run_case<float, 1, 2, false>("f32 5x5 64", 64, 64);
    run_case<float, 1, 4, false>("f32 9x9 64", 64, 64);
    run_case<float, 1, 1, true>("f32 sep 3x3 64", 64, 64);
    run_case<float, 1, 2, true>("f32 sep 5x5 64", 64, 64);
    run_case<float, 1, 4, true>("f32 sep 9x9 64", 64, 64);
    run_case<float, 1, 4, true>("f32 sep 9x9 512", 512, 512);
    run_case<float, 1, 4, false>("f32 9x9 128", 128, 128);
    run_case<float, 1, 4, false>("f32 9x9 256", 256, 256);
    run_case<float, 1, 2, false>("f32 5x5 512", 512, 512);
    run_case<float, 1, 4, false>("f32 9x9 512", 512, 512);
    run_case<std::uint8_t, 1, 1, false>("u8 3x3 128", 128, 128);
    run_case<std::uint8_t, 1, 2, false>("u8 5x5 128", 128, 128);
    run_case<std::uint8_t, 3, 1, false>("u8 rgb 3x3 64", 64, 64);
    run_case<std::uint8_t, 3, 4, false>("u8 rgb 9x9 64", 64, 64);
    run_case<std::uint16_t, 1, 2, false>("u16 5x5 128", 128, 128);
    run_case<std::uint16_t, 1, 4, false>("u16 9x9 128", 128, 128);
    run_case<float, 1, 1, false>("f32 3x3 128", 128, 128);
    run_case<float, 1, 2, false>("f32 5x5 128", 128, 128);
    run_case<float, 1, 2, false>("f32 5x5 256", 256, 256);
    run_case<float, 1, 1, false>("f32 3x3 256", 256, 256);
    run_case<std::uint8_t, 3, 2, false>("u8 rgb 5x5 64", 64, 64);
    run_case<std::uint8_t, 4, 4, false>("u8 rgba 9x9 64", 64, 64);
    run_case<std::uint8_t, 1, 4, false>("u8 9x9 256", 256, 256);
    // 11x11 .. 15x15, and the tile counts past the rule (768 to 4096 tiles).
    run_case<float, 1, 5, false>("f32 11x11 64", 64, 64);
    run_case<float, 1, 7, false>("f32 15x15 64", 64, 64);
    run_case<float, 1, 7, false>("f32 15x15 256", 256, 256);
    run_case<float, 1, 5, false>("f32 11x11 512", 512, 512);
    run_case<float, 1, 7, false>("f32 15x15 512", 512, 512);
    run_case<float, 1, 7, false>("f32 15x15 1024x512", 1024, 512);
    run_case<float, 1, 7, false>("f32 15x15 1024", 1024, 1024);
    run_case<std::uint8_t, 1, 7, false>("u8 15x15 256", 256, 256);
    run_case<std::uint8_t, 1, 7, false>("u8 15x15 512", 512, 512);
    run_case<std::uint8_t, 3, 5, false>("u8 rgb 11x11 64", 64, 64);
    run_case<std::uint8_t, 3, 7, false>("u8 rgb 15x15 64", 64, 64);
    run_case<std::uint8_t, 3, 7, false>("u8 rgb 15x15 256", 256, 256);
    run_case<std::uint16_t, 1, 7, false>("u16 15x15 128", 128, 128);
    run_case<std::uint8_t, 3, 2, false>("u8 rgb 5x5 256", 256, 256);
    run_case<std::uint8_t, 3, 3, false>("u8 rgb 7x7 256", 256, 256);
    run_case<std::uint8_t, 1, 2, false>("u8 5x5 512", 512, 512);
    run_case<std::uint8_t, 1, 3, false>("u8 7x7 512", 512, 512);
    run_case<float, 1, 3, false>("f32 7x7 512", 512, 512);
    // Past 15x15 (the generic kernel's dense sums elsewhere): the tile kernel alone, 16 to 4096 tiles.
    if (std::getenv("TILE") != nullptr) {
      for (const int side : {64, 128, 256, 512, 1024}) {
        run_tile_case<float, 1, 8>("f32 17x17", side, side);
        run_tile_case<float, 1, 11>("f32 23x23", side, side);
        run_tile_case<float, 1, 15>("f32 31x31", side, side);
        run_tile_case<std::uint8_t, 1, 15>("u8 31x31", side, side);
        run_tile_case<std::uint8_t, 3, 15>("u8 rgb 31x31", side / 2, side / 2);
        run_tile_case<std::uint16_t, 1, 7>("u16 15x15", side, side);
        run_tile_case<std::uint16_t, 1, 15>("u16 31x31", side, side);
      }
    }
  }
  return 0;
} catch (const std::exception& e) {  // CUCONV_CUDA_TRY's errors: the call, file:line and CUDA's text
  std::fprintf(stderr, "fast_tune: %s\n", e.what());
  return 1;
}
