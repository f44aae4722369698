// SPDX-License-Identifier: Apache-2.0
#pragma once
// The numbers behind `--variant auto`, one row per kind of GPU (the pattern of CUB's
// dispatch/tuning/tuning_*.cuh). The one dispatcher, choose_auto (src/convolve/choose_variant.cpp),
// reads a row and holds no number of its own; what the kernels can run at all (fast's unrolled
// radii, the tensor kernels' sides, the pass rule) stays with the kernels. Each entry says in one
// line why it has its value; the timings that chose the values are kept with the bench results,
// not here. A row is found by compute capability and, where two products share one (H100 and H200
// are both 9.0), by the product name the driver reports.
#include <cstddef>
#include <limits>
#include <span>
#include <string_view>

namespace cuconv::gpu::tuning {

/// A size rule that never fires: no image has this many pixels.
inline constexpr long long kNever = std::numeric_limits<long long>::max();

/// What auto's choice depends on beyond the filter, the depths and what the kernels support.
/// Taps are kw * kh; pixels are width * height (0 when the caller does not know the size).
struct AutoTuning {
  std::string_view gpu;  ///< which GPUs the row is for, in words
  /// Filters that `fast` runs as its tile kernel on a tiny image (gpu::fast_tile_runs) stay on
  /// `fast` where the rules below, made for large images, would send them to `tensor`.
  bool tiny_images_on_fast;
  /// Of those, 8-bit rank-1 filters that the next rule sends to `tensor` stay on the tile kernel
  /// only up to this side and this many taps summed over its tiles (tiles x kw x kh): its dense
  /// sums grow with kw x kh, `tensor`'s rank-1 sums hardly do.
  int tiny_tile_rank1_max_side;
  long long tiny_tile_rank1_max_tile_taps;
  /// 8-bit rank-1 filters from this radius run their row sums on tensor cores (`tensor`).
  int tensor_rank1_min_radius;
  /// 8-bit rank-1 filters below tensor_rank1_min_radius take `tensor` on images of at least this
  /// many pixels (kNever: they stay on `fast` at every size).
  long long tensor_rank1_small_min_pixels;
  /// 8-bit rank-1 5x5 filters on three or four channels take `tensor` on images of known size up
  /// to this many pixels (0: no such rule).
  long long tensor_rank1_colour_5x5_max_pixels;
  /// 8-bit 5x5 filters (rank-1 or dense) on three or four channels stay on `fast` on images of
  /// known size below this many pixels, where the two rules that send them to `tensor` do not hold.
  long long colour_5x5_tensor_min_pixels;
  /// Dense 8-bit filters on one channel take `tensor` past this many taps.
  int dense_u8_max_fast_taps;
  /// Dense 8-bit filters on three or four channels take `tensor` past this many taps.
  int dense_u8_colour_max_fast_taps;
  /// Dense 8-bit filters on one channel take `tensor` past dense_u8_large_max_fast_taps taps on
  /// images of at least this many pixels, where the warpgroup kernel runs (kNever: no such rule).
  long long dense_u8_large_min_pixels;
  int dense_u8_large_max_fast_taps;
  /// Dense 16-bit filters on one channel take `tensor` from this many taps.
  int dense_u16_min_taps;
  /// 16-bit rank-1 filters that `fast` would sum with its double separable kernel on the FMA units
  /// (gpu::fast_wide_runs past its tile kernel's double sums; colour images: one channel runs on the
  /// FP64 tensor cores, gpu::fast_wide_mma_runs) take `tensor`'s digit sums from
  /// u16_rank1_tensor_wide_side taps a side on images of known size up to
  /// u16_rank1_tensor_wide_max_elements elements (pixels x channels; 0: no such rule): the double
  /// sums grow with the side, `tensor`'s digit sums less.
  int u16_rank1_tensor_wide_side;
  long long u16_rank1_tensor_wide_max_elements;
  /// 16-bit filters of u16_mid_tensor_min_taps to u16_mid_tensor_max_taps taps that `fast` sums
  /// densely (its float separable sums never serve 16-bit results, its double sums start at 15x15)
  /// take `tensor`'s digit sums on images of known size from
  /// u16_mid_tensor_min_elements elements (pixels x channels; kNever: no such rule) up to
  /// u16_mid_tensor_elements_per_tap x taps, where they were measured faster.
  int u16_mid_tensor_min_taps;
  int u16_mid_tensor_max_taps;
  long long u16_mid_tensor_min_elements;
  long long u16_mid_tensor_elements_per_tap;
  /// Dense float filters take `tensor` from this many taps.
  int dense_f32_min_taps;
  /// Dense float filters on one channel take `tensor` from dense_f32_small_min_taps taps on images
  /// of known size up to this many pixels (0: no such rule).
  long long dense_f32_small_max_pixels;
  int dense_f32_small_min_taps;
  /// Other filters of this many taps or more go to `fft` (where its rounding holds).
  int fft_min_taps;
  /// `tiled-halo` while its shared tile fits this many bytes; `cached` past it.
  std::size_t tiled_halo_max_shared_bytes;
};

/// Compute capability 9.0 as the H100 measured it: the values auto has used since the rules were made.
inline constexpr AutoTuning kSm90H100{
    .gpu = "compute capability 9.0 (H100)",
    // 8-bit 64^2-256^2 images, 5x5 to 9x9: the tile kernel 1.2-2.1x faster than tensor (c10c327).
    .tiny_images_on_fast = true,
    // 8-bit rank-1 on 64^2-512^2: the tile kernel ahead of tensor's rank-1 sums up to 1024 tiles at
    // 9x9 and 256 at 15x15, behind at 768-1024 tiles of 15x15 and at every 31x31 (bb037ee, tiny).
    .tiny_tile_rank1_max_side = 15,
    .tiny_tile_rank1_max_tile_taps = 1024LL * 81,
    // From 7x7 the row sums on tensor cores outrun fast's float passes; 3x3 and 5x5 are bound by memory either way.
    .tensor_rank1_min_radius = 3,
    // 3x3 and 5x5 rank-1 filters: fast was never slower, at any size measured.
    .tensor_rank1_small_min_pixels = kNever,
    // Colour 5x5 rank-1 filters: tensor 7-10% ahead on RGB 4096^2 and 6000x4000 and on RGBA
    // 8192^2, level on RGB 8192^2, 7% behind on RGB 16384^2 (h100-kernels-9e8e560; the H200 agrees).
    .tensor_rank1_colour_5x5_max_pixels = 8192LL * 8192LL,
    // Those and dense colour 5x5 on small images: fast's strips 1.2-1.3x ahead of tensor on RGB
    // 256^2 (12.5 / 12.9 against 16.2 / 15.4 us, h100-kernels-836d777-tiny), tensor ahead from
    // 4096^2; sizes between were not measured.
    .colour_5x5_tensor_min_pixels = 1024LL * 1024LL,
    // One channel: fast's unrolled sums keep up with tensor up to 5x5 (25 taps), not past it.
    .dense_u8_max_fast_taps = 25,
    // Three and four channels: tensor is faster from 5x5, fast only below.
    .dense_u8_colour_max_fast_taps = 24,
    // One-channel 5x5 on large images: the warpgroup kernel is level with fast or faster from 4096^2.
    .dense_u8_large_min_pixels = 4096LL * 4096LL,
    .dense_u8_large_max_fast_taps = 24,
    // 16-bit on one channel: the digit sums on tensor cores win from 15x15; fast's unrolled sums below.
    .dense_u16_min_taps = 225,
    // 16-bit rank-1 colour images past the tile kernel (h100-u16-rank1-b78946f, fast's strips since
    // b78946f): 15x15 on RGB 256^2 to 8192^2: tensor 6-89% behind fast's double sums. 31x31: fast's
    // sums 1.25-1.55x tensor's time up to 1024^2 elements (RGB 128^2 to 512^2), level at RGB 724^2,
    // tensor 7-46% behind past it. Sides between were not measured: 15x15's rule. One channel (the
    // FP64 tensor cores' double sums): fast at every size measured, 1.1x (1024^2 15x15) to 2.9x
    // (8192^2 31x31) faster than tensor (h100-u16-mma-d4790fe).
    .u16_rank1_tensor_wide_side = 31,
    .u16_rank1_tensor_wide_max_elements = 1024LL * 1024LL,
    // 16-bit 7x7 and 9x9 (h100-u16-mma-d4790fe; a second run in another lease, not kept, agreed):
    // tensor 1.2-1.5x ahead of fast's dense sums on one channel of 724^2 and 1024^2, 1200^2 9x9 and
    // RGB 512^2, 7-10% at 1200^2 7x7 and 1448^2 9x9; fast ahead at 512^2, RGB 256^2, 1448^2 7x7
    // (2.1M elements; the rule ends at 1.6M), 2048^2 9x9, RGB 1024^2 (3.1M; the rule ends at
    // 2.65M) and every larger size but 2896^2 9x9 (tensor 5-6% ahead, between sizes where fast
    // wins: no rule). 11x11, 13x13 and four channels (h100-u16-mid-7b99e70): tensor 1.2-1.6x
    // ahead on RGB and RGBA 512^2 and one channel of 1024^2, 1.12-1.36x at 13x13 on RGB 1024^2 and
    // one channel of 2048^2; level at RGB 1024^2 11x11 (3.1M) and RGBA 1024^2 13x13 (4.2M); fast
    // ahead at RGBA 1024^2 7x7 to 11x11 (4.2M; at 11x11 the rule ends at 3.96M) and at 2048^2 of
    // one channel 11x11 and of three or four 7x7 to 11x11. One channel's 13x13 on 4096^2 and
    // 6000x4000 and RGB 2048^2 13x13 (tensor 10-22% ahead, past the rule's 5.5M) stay slow.
    .u16_mid_tensor_min_taps = 49,
    .u16_mid_tensor_max_taps = 169,
    .u16_mid_tensor_min_elements = 512LL * 768LL,
    .u16_mid_tensor_elements_per_tap = 32768,
    // Float: block floating point on tensor cores beats fft from 16x16; fast below.
    .dense_f32_min_taps = 256,
    // Dense float 15x15 on one 4096^2 channel: tensor 15% ahead (fast's grid leaves the last wave
    // half empty there); from 8192^2, and on RGB, fast is ahead (h100-kernels-9e8e560; the H200 agrees).
    .dense_f32_small_max_pixels = 4096LL * 4096LL,
    .dense_f32_small_min_taps = 225,
    // From 16x16 overlap-save, whose cost hardly grows with the filter, undercuts direct sums.
    .fft_min_taps = 256,
    // The default shared memory a block may use without opting in; cached needs no more past it.
    .tiled_halo_max_shared_bytes = std::size_t{48} * 1024,
};

/// Compute capability 9.0 on the H200: the H100's values; its full benchmark
/// (h200-kernels-cc289ba, h200-rank1-small-*.json) measured the same rules there.
inline constexpr AutoTuning kSm90H200 = [] {
  AutoTuning row = kSm90H100;
  row.gpu = "compute capability 9.0 (H200)";
  return row;
}();
/// Every other GPU, and no GPU (CI's machines): the H100's rules, which are the only ones
/// measured, without the warpgroup kernel's size rule (that kernel runs on 9.0 only).
inline constexpr AutoTuning kGeneric = [] {
  AutoTuning row = kSm90H100;
  row.gpu = "other GPUs";
  row.dense_u8_large_min_pixels = kNever;  // no warpgroup kernel
  // The colour 5x5, small float 15x15, small 16-bit rank-1 and mid-size 16-bit rules were
  // measured on 9.0 only.
  row.tensor_rank1_colour_5x5_max_pixels = 0;
  row.u16_rank1_tensor_wide_max_elements = 0;
  row.u16_mid_tensor_min_elements = kNever;
  row.colour_5x5_tensor_min_pixels = 0;
  row.dense_f32_small_max_pixels = 0;
  row.dense_f32_small_min_taps = 256;
  return row;
}();

/// A GPU as the rows are keyed: compute capability and the product name the driver reports.
struct GpuKind {
  int major = 0;  ///< 0: no GPU
  int minor = 0;
  std::string_view product;
};

/// One row of the table: the GPUs it is for (`product_contains` empty: any product of that
/// compute capability) and their values.
struct AutoTuningRow {
  int major;
  int minor;
  std::string_view product_contains;
  const AutoTuning* tuning;
};

/// The table, most specific row first; the first match wins, kGeneric where none does.
inline constexpr AutoTuningRow kAutoTuningRows[] = {
    {9, 0, "H200", &kSm90H200},
    {9, 0, "", &kSm90H100},
};

/// The row for `gpu` in `rows` (kGeneric where none matches).
[[nodiscard]] constexpr const AutoTuning& auto_tuning_for(const GpuKind& gpu,
                                                          std::span<const AutoTuningRow> rows = kAutoTuningRows) {
  for (const AutoTuningRow& row : rows)
    if (row.major == gpu.major && row.minor == gpu.minor &&
        (row.product_contains.empty() || gpu.product.find(row.product_contains) != std::string_view::npos))
      return *row.tuning;
  return kGeneric;
}

}  // namespace cuconv::gpu::tuning
