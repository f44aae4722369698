// SPDX-License-Identifier: Apache-2.0
#pragma once
// Host-side rules of the `fast` launch (kernels/fast.cuh): how many blocks span a row, how long a
// strip each block walks, and what is known of the output sums' range. Compiled by nvcc only
// (the types come from the kernel headers); read by src/gpu/launch/launch_fast.cuh and
// bench/fast_tune.cu, so the benchmark launches exactly as the product does.
#include <kernels/fast.cuh>
#include <kernels/fast_tile.cuh>

#include <limits>
#include <type_traits>

namespace cuconv::gpu {

using kernels::div_up;
using kernels::FilterTaps;
using kernels::SumRange;

/// Blocks of fast_kernel along a row of `row_elems` elements (interleaved channels included).
template <class In, int Radius>
constexpr int fast_column_blocks(int row_elems) {
  return div_up(row_elems, kernels::kFastThreads * kernels::fast_vector_elems<In, Radius>());
}

/// Rows a thread walks for an image of `height` rows, when `column_blocks` blocks span a row and
/// `resident_blocks` blocks fit on the GPU at once (src/gpu/launch/occupancy.cuh, queried once per
/// device). Long strips amortise the kh - 1 rows of warm-up (partial sums of the rows above the
/// strip), but the grid's last wave leaves SMs idle, so the grid needs enough waves, or exactly
/// one. The rule, each number measured (bench/results/kernel-notes/fast.md, 'Strip length'):
///  - 3x3 takes 16 rows (f32 3x3, bound by DRAM alone, 4: the rows its strips share come from L2,
///    see RowReuse, so short strips cost little); 5x5 starts at 64 and halves while the grid has
///    fewer than 4 waves, down to 16;
///  - larger filters start at the smallest power of two >= 5 (kh - 1), at most 128 (the warm-up
///    at most a fifth of the strip), and halve below 1.5 waves, down to 16;
///  - separable filters (2 kh FMAs an output, near the copy roof's pace) start at the smallest
///    power of two >= 4 (kh - 1) (they walk two rows a step) and halve below 4 waves, down to 32;
///  - 8- and 16-bit 3x3 and 5x5 grids of between one and two waves at the floor take strips just
///    long enough for one wave;
///  - grids below half a wave (images of a few megapixels) go on halving while they stay below
///    it, down to 2 rows (3x3, 5x5) or 8;
///  - grids that would still fit in a quarter of the resident blocks with strips half as long
///    (images of at most a few hundred thousand pixels) halve them, down to one row: every block
///    runs at once, so the kernel lasts one block's walk of strip + kh - 1 rows, each a chain of
///    loads and sums.
template <class In, int Radius, bool Separable>
constexpr int fast_strip_rows_for(int height, int column_blocks, int resident_blocks) {
  constexpr bool kMemoryBound = Radius <= 2;
  constexpr int kMinHalfWaves = kMemoryBound ? 8 : Separable ? 8 : 3;  // waves wanted, in halves
  constexpr int kShortest = kMemoryBound ? 16 : Separable ? 32 : 16;
  constexpr int kLongest = [] {
    if (Radius == 1 && std::is_same_v<In, float>) return 4;
    if (kMemoryBound) return Radius == 1 ? 16 : 64;
    // Warm-up (kh - 1 rows) at most a fifth of the strip, a quarter for separable filters
    const int warm_up_share = Separable ? 4 : 5;
    int rows = 32;
    while (rows < warm_up_share * 2 * Radius && rows < 128) rows *= 2;
    return rows;
  }();
  int strip = kLongest;
  const long long wanted_blocks = static_cast<long long>(kMinHalfWaves) * resident_blocks / 2;
  const auto blocks = [&](int rows) { return static_cast<long long>(div_up(height, rows)) * column_blocks; };
  while (strip > kShortest && blocks(strip) < wanted_blocks) strip /= 2;
  // 8-bit and 16-bit sizes whose grid at the floor holds more than one wave but less than two:
  // the second wave runs one or two blocks an SM, about as long as the first. Strips just long
  // enough for one wave (at most twice the floor) do the same work in one.
  if (kMemoryBound && std::is_integral_v<In> && strip == kShortest && blocks(strip) > resident_blocks &&
      blocks(strip) < 2LL * resident_blocks) {
    int rows = strip;
    while (rows < 2 * kShortest && blocks(rows) > resident_blocks) ++rows;
    if (blocks(rows) <= resident_blocks) return rows;
  }
  constexpr int kSubWaveShortest = kMemoryBound ? 2 : 8;
  while (strip > kSubWaveShortest && 2 * blocks(strip) < resident_blocks) strip /= 2;
  while (strip > 1 && 4 * blocks(strip / 2) <= resident_blocks) strip /= 2;
  return strip;
}

// The rule at the shapes it was tuned on (an H100: resident blocks = blocks per SM x 132 SMs);
// bench/results/kernel-notes/fast.md, 'Strip length', has the measurements behind each.
static_assert(fast_strip_rows_for<float, 1, false>(16384, 32, 9 * 132) == 4, "f32 3x3 16384^2: 4 rows");
static_assert(fast_strip_rows_for<float, 1, false>(4096, 8, 9 * 132) == 4, "f32 3x3 4096^2: 4 rows");
static_assert(fast_strip_rows_for<float, 1, false>(777, 2, 9 * 132) == 2,
              "f32 3x3 1001 x 777: below half a wave, 2 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(16384, 8, 6 * 132) == 16, "8U 3x3 16384^2: 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(2048, 3, 6 * 132) == 8, "RGB 3x3 2048^2: 8 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(4096, 2, 6 * 132) == 16, "8U 3x3 4096^2: 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(4096, 6, 6 * 132) == 32,
              "8U RGB 3x3 4096^2: one wave at 32 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(8192, 12, 6 * 132) == 16, "8U RGB 3x3 8192^2: 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(4000, 9, 6 * 132) == 16, "8U RGB 3x3 6000 x 4000: 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(8192, 4, 6 * 132) == 16,
              "8U 3x3 8192^2 (2.6 waves, one channel): 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(4096, 4, 7 * 132) == 18,
              "8U 5x5 4096^2: one wave at 18 rows");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(16384, 16, 7 * 132) == 64, "8U 5x5 16384^2: 64 rows");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(8192, 24, 8 * 132) == 32, "8U RGB 5x5 8192^2: 32 rows");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(4096, 12, 8 * 132) == 16, "8U RGB 5x5 4096^2: 16 rows");
static_assert(fast_strip_rows_for<float, 2, false>(16384, 32, 9 * 132) == 64, "f32 5x5 16384^2: 64 rows");
static_assert(fast_strip_rows_for<float, 2, false>(4096, 8, 9 * 132) == 16, "f32 5x5 4096^2: 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(779, 1, 6 * 132) == 2,
              "8U 3x3 1003 x 779: below half a wave, 2 rows");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(9, 3, 7 * 132) == 1, "RGB 5x5 1001 x 9: 1 row");
static_assert(fast_strip_rows_for<float, 7, false>(16384, 32, 5 * 132) == 128, "f32 15x15 16384^2 keeps 128 rows");
static_assert(fast_strip_rows_for<float, 7, false>(4096, 8, 5 * 132) == 32, "f32 15x15 4096^2: 32 rows");
static_assert(fast_strip_rows_for<unsigned char, 7, false>(4096, 24, 5 * 132) == 64, "8U RGB 15x15 4096^2: 64 rows");
static_assert(fast_strip_rows_for<unsigned char, 4, false>(4096, 12, 4 * 132) == 32, "8U RGB 9x9 4096^2: 32 rows");
static_assert(fast_strip_rows_for<unsigned char, 4, false>(8192, 24, 4 * 132) == 64, "8U RGB 9x9 8192^2 keeps 64 rows");
static_assert(fast_strip_rows_for<float, 15, true>(4096, 8, 3 * 132) == 32, "separable 31x31 4096^2: 32 rows");
static_assert(fast_strip_rows_for<float, 15, true>(16384, 32, 3 * 132) == 128,
              "separable 31x31 16384^2 keeps 128 rows");
static_assert(fast_strip_rows_for<float, 7, true>(4096, 8, 5 * 132) == 32, "separable 15x15 4096^2: 32 rows");
static_assert(fast_strip_rows_for<float, 7, true>(8192, 16, 5 * 132) == 32, "separable 15x15 8192^2: 32 rows");
static_assert(fast_strip_rows_for<float, 7, true>(16384, 32, 5 * 132) == 64, "separable 15x15 16384^2: 64 rows");
static_assert(fast_strip_rows_for<float, 7, true>(2048, 4, 5 * 132) == 16, "separable 15x15 2048^2 keeps 16 rows");
static_assert(fast_strip_rows_for<float, 7, true>(777, 2, 5 * 132) == 8, "separable 15x15 1001 x 777: 8 rows");
static_assert(fast_strip_rows_for<float, 4, false>(64, 1, 7 * 132) == 1, "f32 9x9 64^2: 1 row");
static_assert(fast_strip_rows_for<float, 4, false>(128, 1, 7 * 132) == 1, "f32 9x9 128^2: 1 row");
static_assert(fast_strip_rows_for<float, 4, false>(256, 1, 7 * 132) == 2, "f32 9x9 256^2: 2 rows");
static_assert(fast_strip_rows_for<float, 4, false>(512, 1, 7 * 132) == 4, "f32 9x9 512^2: 4 rows");
static_assert(fast_strip_rows_for<float, 4, true>(64, 1, 7 * 132) == 1, "separable 9x9 64^2: 1 row");
static_assert(fast_strip_rows_for<float, 2, false>(64, 1, 9 * 132) == 1, "f32 5x5 64^2: 1 row");
static_assert(fast_strip_rows_for<float, 2, false>(512, 1, 9 * 132) == 2, "f32 5x5 512^2 keeps 2 rows");

/// Whether `fast` runs a (2 radius + 1)^2 filter (radius in FastTileRadii) on an image of
/// `row_elems` elements a row (interleaved channels included) and `height` rows as
/// fast_tile_kernel's tiles instead of fast_kernel's strips (or, past 15x15, its generic kernel):
/// at most 256 tiles below 7x7; from 7x7 at most 1024 tiles and 1024 tiles' worth of 17x17 taps (a
/// block's time grows with its K^2 shared-memory reads). On grids this small every block of either
/// kernel runs at once, and the tile kernel's few independent loads a thread wait one load latency
/// where fast_kernel's strip walk waits one a row. Measured (H100, REPEAT=20, strips -> tile,
/// bench/results/kernel-notes/fast.md, 'Tiny images'): faster up to 256 tiles (f32 9x9 64^2 8.6 ->
/// 4.3 us, f32 15x15 64^2 18.6 -> 5.6); at 1024 tiles faster at 7x7 (f32 8.1 -> 7.2, 8U 15.1 ->
/// 7.4), 9x9 (f32 10.9 -> 8.7), 15x15 (f32 21.5 -> 14.1), 3-5% slower at f32 5x5; past the taps'
/// limit f32 15x15 at 4096 tiles 37.0 -> 44.3.
constexpr bool fast_tile_applies(int radius, int row_elems, int height) {
  const long long tiles =
      static_cast<long long>(div_up(row_elems, kernels::kFastTileW)) * div_up(height, kernels::kFastTileH);
  if (radius < 3) return tiles <= 256;
  const long long k = 2 * radius + 1;
  return tiles <= 1024 && tiles * k * k <= 1024 * 17 * 17;
}

static_assert(fast_tile_applies(3, 512, 512) && fast_tile_applies(8, 512, 512) && !fast_tile_applies(2, 512, 512) &&
                  fast_tile_applies(2, 256, 256) && !fast_tile_applies(7, 513, 512) && !fast_tile_applies(4, 1024, 512),
              "f32 512^2: tiles from 7x7 to 17x17; 256^2: tiles");
static_assert(fast_tile_applies(15, 256, 256) && !fast_tile_applies(15, 3 * 256, 256) &&
                  !fast_tile_applies(9, 512, 512),
              "31x31: 256 tiles, not 768; 19x19 at 1024 tiles: no");

/// fast_tile_applies for the tile kernel's double sums (16-bit rank-1 filters from 15x15, which
/// `fast` otherwise sums with its double separable kernel, kernels/fast_wide.cuh): half the float
/// rule's taps, as an FP64 multiply-add issues at half the FP32 rate. Measured (H100, 1cda226) at
/// 16-bit 128^2 up to 31x31 and 256^2 at 15x15, the fastest variant in every such row; past it
/// not timed (bench/results/kernel-notes/fast.md, 'Double sums on tiny 16-bit images').
constexpr bool fast_tile_double_applies(int radius, int row_elems, int height) {
  const long long tiles =
      static_cast<long long>(div_up(row_elems, kernels::kFastTileW)) * div_up(height, kernels::kFastTileH);
  const long long k = 2 * radius + 1;
  return fast_tile_applies(radius, row_elems, height) && tiles * k * k <= 512 * 17 * 17;
}

static_assert(fast_tile_double_applies(15, 128, 128) && fast_tile_double_applies(7, 256, 256) &&
                  !fast_tile_double_applies(15, 256, 256) && !fast_tile_double_applies(7, 512, 512),
              "16-bit 128^2 up to 31x31; 256^2 up to 15x15; 512^2 none");

/// The range every output sum of fast_kernel on 8- or 16-bit input lies in, from the bound
/// |delta| + (input maximum) x (sum of |weights|) with room for float rounding (for a separable
/// filter the sums of its two factors multiply): below 2^22 SumRange::small (rounding leaves such
/// sums well above -1.5 * 2^23, where round_pack_u8x4 needs no clamp), below 2^30
/// SumRange::inside_int, else (and for float input, NaN or infinite weights) SumRange::any.
template <class In, int Radius, bool Separable, int Count>
SumRange fast_sum_range(const FilterTaps<Count>& taps, float delta) {
  if constexpr (!std::is_integral_v<In>) {
    return SumRange::any;
  } else {
    constexpr int K = 2 * Radius + 1;
    const auto abs_sum = [&](int first, int count) {
      double sum = 0;
      for (int i = first; i < first + count; ++i) sum += taps.w[i] < 0 ? -double{taps.w[i]} : double{taps.w[i]};
      return sum;
    };
    const double gain = Separable ? abs_sum(0, K) * abs_sum(K, K) : abs_sum(0, K * K);
    const double bound =
        (delta < 0 ? -double{delta} : double{delta}) + static_cast<double>(std::numeric_limits<In>::max()) * gain;
    if (bound < 4194304.0) return SumRange::small;  // false for NaN
    if (bound < 1073741824.0) return SumRange::inside_int;
    return SumRange::any;
  }
}

}  // namespace cuconv::gpu
