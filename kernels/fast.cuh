#pragma once
/// @file fast.cuh
/// `fast`: our direct convolution, built for memory bandwidth at small filters and for FMA
/// throughput at large ones.
///  - Interleaved pixels (RGB, RGBA) are filtered in place: a row of W pixels x C channels is a
///    row of W*C elements, and tap j of element e reads element e + (j - anchor) * C. No
///    split/merge round trip.
///  - Each thread owns kVec adjacent elements of a row (one 16-byte load where possible) and
///    walks down a strip of rows. Every input row is read once into registers (its own chunk
///    plus halo elements of the neighbour chunks) and added into the kh partial output rows it
///    touches; the finished row leaves through one vector store. Vertical reuse lives in
///    registers. Horizontal reuse: for small filters the halo words pass between lanes by warp
///    shuffle (each thread loads only its own chunk); from 7x7 on each warp stages its rows in
///    shared memory with cp.async several rows ahead (fast_stages_rows).
///  - The weights are a kernel parameter (constant bank, compile-time offsets), so streams with
///    different filters never share state. ptxas feeds them to the FMAs through uniform registers
///    (ULDC.64, about one per 7 FFMAs in the 15x15 SASS).
///  - Separable filters (rank 1) use the same walk: each row is first filtered horizontally
///    (kw FMAs per element), then added into the partial rows with one vertical weight each.
/// Borders: the vector path serves chunks that lie inside the row; the others, and rows outside
/// the image, are read element by element through the border rule.
#include "common.cuh"

#include <cstring>
#include <limits>
#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kFastBlockX = 32;  ///< threads along a row (one warp)
inline constexpr int kFastBlockY = 4;   ///< warps per block, side by side along the row
inline constexpr int kFastThreads = kFastBlockX * kFastBlockY;

/// What the launcher knows of every output sum of fast_kernel on 8- or 16-bit input
/// (fast_sum_range), so that integer results round with fewer instructions.
enum class SumRange : int {
  any,         ///< no bound: cvRound's out-of-range rule (INT_MIN) applies
  inside_int,  ///< |sum| < 2^30: no out-of-range rule
  small,       ///< |sum| < 2^22: 8-bit results also skip the clamp before the rounding addition
};

/// Four sums rounded half to even and saturated to u8, packed into one word (first sum in the
/// low byte): the same bytes as saturate_inside_int<unsigned char>. Adding 1.5 * 2^23 leaves a
/// sum, rounded half to even, in the low mantissa bits; taking the float's bits less those of
/// 1.5 * 2^23 gives it as an int for |v| < 2^22, and sums >= 2^22 land beyond 255 and saturate.
/// cvt.pack.sat then saturates two ints to bytes at a time. Sums below -3 * 2^22 need the clamp
/// to -2^22 first (one FMNMX; NaN gets it too, as in round_clamp_small_int): for v + 1.5 * 2^23
/// in (-1.5 * 2^23, 0] the int would wrap. Sums known to lie above -2^22 (SumRange::small) skip
/// it: one instruction of about 3.5 a result (docs/perf-notes.md section 22). On an H100 the
/// packing made 8U 3x3 and 5x5 1-2% faster than byte PRMTs (section 14). clamp_low is the same
/// for a whole launch; as an argument it gave the SASS of a template flag, except at 8U 15x15
/// (8 and 16 fewer instructions at 1 and 3 channels).
__device__ __forceinline__ unsigned round_pack_u8x4(bool clamp_low, float s0, float s1, float s2, float s3) {
  const auto rounded = [clamp_low](float v) {
    if (clamp_low) v = fmaxf(v, -4194304.0f);
    return __float_as_int(__fadd_rn(v, 12582912.0f)) - 0x4B400000;
  };
  unsigned high, word;
  // d = (c << 16) | (sat(a) << 8) | sat(b)
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(high) : "r"(rounded(s3)), "r"(rounded(s2)), "r"(0));
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(word) : "r"(rounded(s1)), "r"(rounded(s0)), "r"(high));
  return word;
}

/// Elements per thread: 16 bytes of input where the accumulators (kh x kVec) still fit in
/// registers, narrower for wide filters.
template <class In, int Radius>
__host__ __device__ constexpr int fast_vector_elems() {
  constexpr int by_bytes = 16 / static_cast<int>(sizeof(In));   // 4 f32, 8 u16, 16 u8
  // Accumulators per filter row: 16 at 3x3 (one full 16-byte u8 load; with the halo passed by
  // shuffle 80 registers, 30% occupancy, and on an H100 8U 3x3 0.328 -> 0.288 ms, RGB 3x3
  // 0.272 -> 0.227 against 8), 8 up to 9x9, 4 beyond.
  constexpr int register_cap = Radius <= 1 ? 16 : Radius <= 4 ? 8 : 4;
  return by_bytes < register_cap ? by_bytes : register_cap;
}

/// Rows a thread walks for an image of `height` rows, when `column_blocks` blocks span a row and
/// `resident_blocks` blocks fit on the GPU at once. Long strips amortise the kh - 1 rows of
/// warm-up (partial sums of rows above the strip); but the grid's last wave leaves SMs idle, so
/// it needs enough waves, or exactly one. Measured on an H100 (docs/perf-notes.md sections 11,
/// 13 and 21). From 7x7 on (rows staged in shared memory) the best strip kept the warm-up near a
/// fifth of it: 32 rows at 7x7, 64 at 9x9, 128 at 15x15 (f32 15x15 16384^2: 3.06 ms at 64 rows,
/// 2.90 at 128). Memory-bound sizes (3x3, 5x5) wanted 8 waves and 8-row strips while the lanes
/// at a row's ends read their halo through per-row calls (blocks with such a warp finished last);
/// with those positions found once (section 21) longer strips won: 8U 5x5 16384^2 0.471 -> 0.466
/// ms at 64 rows, 8U RGB 5x5 8192^2 0.410 -> 0.386 at 32, 8U 5x5 8192^2 0.162 -> 0.143 at 16,
/// 8U RGB 5x5 4096^2 0.140 -> 0.126 at 16; 3x3 was flat from 12 to 32 rows at 16384^2. So:
/// 3x3 takes 16 rows, 5x5 starts at 64 and halves while the grid has fewer than 4 waves, down
/// to 16; larger filters start at the
/// smallest power of two >= 5 (kh - 1), at most 128, and halve below 1.5 waves, down to 16. The
/// 1.5 comes from strip sweeps at 4096^2 (section 15): halving below 4 waves, as before, cut
/// strips the warm-up then outweighed (f32 15x15 0.351 -> 0.290 ms at 32 rows instead of 16,
/// 8U RGB 15x15 0.790 -> 0.715 at 64, separable 31x31 0.280 -> 0.232 at 32), and below 1 wave
/// left some too long (8U RGB 9x9 0.385 at 64 rows, 0.337 at 32). Separable filters (2 kh FMAs an
/// output, near the copy roof's pace) keep halving below 4 waves, down to 32 rows: at 1.5 waves
/// separable 15x15 at 8192^2 took 128 rows and 0.415 ms against 0.348 at 32 (section 15). Since
/// they walk two rows a step (kRowsPerStep) they start at the smallest power of two >= 4 (kh - 1):
/// separable 15x15 at 16384^2 0.972 / 0.958 / 1.029 ms at 32 / 64 / 128 rows (section 19). The
/// rule also moved 9x9 (64 -> 32 rows) and 17x17 (128 -> 64); those were not timed.
/// Images of a few megapixels fill less than half a wave even at that floor, and SMs idle: there
/// strips go on halving while the grid stays below half a wave, down to 2 rows (memory-bound) or
/// 8. Measured (section 14): 8U 3x3 at 1003 x 779 0.045 -> 0.022 ms at 2 rows, f32 3x3 at
/// 1001 x 777 0.022 -> 0.014, separable 15x15 there 0.051 -> 0.042 at 8 rows; 2048^2 and larger
/// grids reach half a wave before and keep their strips.
/// f32 3x3, the one size bound by DRAM alone, starts at 4 rows: the rows its strips share come
/// from L2 (RowReuse), so short strips cost little (16384^2: 0.804 ms at 4 rows, 0.811 at 6,
/// 0.820 at 32, 0.828 at 8, 0.88 at 3; section 15).
template <class In, int Radius, bool Separable>
__host__ __device__ constexpr int fast_strip_rows_for(int height, int column_blocks, int resident_blocks) {
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
  // enough for one wave (at most twice the floor) do the same work in one (section 21: 8U 5x5
  // at 4096^2 0.0431 ms at 18 rows, 0.0452-0.0469 at 12-20; 8U RGB 3x3 there 0.0614 at 32,
  // 0.0618 at 16). f32 was not timed here.
  if (kMemoryBound && std::is_integral_v<In> && strip == kShortest && blocks(strip) > resident_blocks &&
      blocks(strip) < 2LL * resident_blocks) {
    int rows = strip;
    while (rows < 2 * kShortest && blocks(rows) > resident_blocks) ++rows;
    if (blocks(rows) <= resident_blocks) return rows;
  }
  constexpr int kSubWaveShortest = kMemoryBound ? 2 : 8;
  while (strip > kSubWaveShortest && 2 * blocks(strip) < resident_blocks) strip /= 2;
  return strip;
}

// The rule at shapes timed on an H100 (cuconv_fast_tune; resident blocks = blocks per SM x 132).
static_assert(fast_strip_rows_for<float, 1, false>(16384, 32, 9 * 132) == 4, "f32 3x3 16384^2: 4 rows");
static_assert(fast_strip_rows_for<float, 1, false>(4096, 8, 9 * 132) == 4, "f32 3x3 4096^2: 4 rows (4 to 8 within 2%)");
static_assert(fast_strip_rows_for<float, 1, false>(777, 2, 9 * 132) == 2, "f32 3x3 1001 x 777: below half a wave, 2 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(16384, 8, 6 * 132) == 16, "8U 3x3 16384^2: 16 rows");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(2048, 3, 6 * 132) == 8, "RGB 3x3 2048^2: 8 rows, the fastest of 2..16");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(4096, 2, 6 * 132) == 16, "8U 3x3 4096^2: 16 rows (11: 1% faster)");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(4096, 6, 6 * 132) == 32, "8U RGB 3x3 4096^2: one wave at 32 rows (16 as fast)");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(8192, 12, 6 * 132) == 16, "8U RGB 3x3 8192^2: 16 rows (16 and 32 the best)");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(4096, 4, 7 * 132) == 18, "8U 5x5 4096^2: one wave at 18 rows, the best of 8..20");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(16384, 16, 7 * 132) == 64, "8U 5x5 16384^2: 64 rows (48: 1% faster)");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(8192, 24, 8 * 132) == 32, "8U RGB 5x5 8192^2: 32 rows, the best of 8..64");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(4096, 12, 8 * 132) == 16, "8U RGB 5x5 4096^2: 16 rows (16 and 20 the best)");
static_assert(fast_strip_rows_for<float, 2, false>(16384, 32, 9 * 132) == 64, "f32 5x5 16384^2: 64 rows, the best of 16..64");
static_assert(fast_strip_rows_for<float, 2, false>(4096, 8, 9 * 132) == 16, "f32 5x5 4096^2: 16 rows, the best of 6..16");
static_assert(fast_strip_rows_for<unsigned char, 1, false>(779, 1, 6 * 132) == 2, "8U 3x3 1003 x 779: below half a wave, 2 rows");
static_assert(fast_strip_rows_for<unsigned char, 2, false>(9, 3, 7 * 132) == 2, "RGB 5x5 1001 x 9: 2 rows");
static_assert(fast_strip_rows_for<float, 7, false>(16384, 32, 5 * 132) == 128, "f32 15x15 16384^2 keeps 128 rows");
static_assert(fast_strip_rows_for<float, 7, false>(4096, 8, 5 * 132) == 32, "f32 15x15 4096^2: 32 rows (best: 32 and 64)");
static_assert(fast_strip_rows_for<unsigned char, 7, false>(4096, 24, 5 * 132) == 64, "8U RGB 15x15 4096^2: 64 rows, the best");
static_assert(fast_strip_rows_for<unsigned char, 4, false>(4096, 12, 4 * 132) == 32, "8U RGB 9x9 4096^2: 32 rows, the best");
static_assert(fast_strip_rows_for<unsigned char, 4, false>(8192, 24, 4 * 132) == 64, "8U RGB 9x9 8192^2 keeps 64 rows");
static_assert(fast_strip_rows_for<float, 15, true>(4096, 8, 3 * 132) == 32, "separable 31x31 4096^2: 32 rows, the best");
static_assert(fast_strip_rows_for<float, 15, true>(16384, 32, 3 * 132) == 128, "separable 31x31 16384^2 keeps 128 rows");
static_assert(fast_strip_rows_for<float, 7, true>(4096, 8, 5 * 132) == 32, "separable 15x15 4096^2: 32 rows, the best");
static_assert(fast_strip_rows_for<float, 7, true>(8192, 16, 5 * 132) == 32, "separable 15x15 8192^2: 32 rows");
static_assert(fast_strip_rows_for<float, 7, true>(16384, 32, 5 * 132) == 64, "separable 15x15 16384^2: 64 rows, the best (two rows a step)");
static_assert(fast_strip_rows_for<float, 7, true>(2048, 4, 5 * 132) == 16, "separable 15x15 2048^2 keeps 16 rows");
static_assert(fast_strip_rows_for<float, 7, true>(777, 2, 5 * 132) == 8, "separable 15x15 1001 x 777: 8 rows");

/// Filter weights passed by value: dense kh x kw row-major, or separable (kw horizontal then kh
/// vertical). Lives in the kernel's parameter constant bank.
template <int Count>
struct FilterTaps {
  float w[Count];
};

/// Blocks of fast_kernel along a row of `row_elems` elements (interleaved channels included).
template <class In, int Radius>
__host__ __device__ constexpr int fast_column_blocks(int row_elems) {
  return div_up(row_elems, kFastThreads * fast_vector_elems<In, Radius>());
}

/// The range every output sum of fast_kernel on 8- or 16-bit input lies in, from the bound
/// |delta| + (input maximum) x (sum of |weights|) with room for float rounding (for a separable
/// filter the sums of its two factors multiply): below 2^22 SumRange::small (rounding leaves such
/// sums well above -1.5 * 2^23, where round_pack_u8x4 needs no clamp), below 2^30
/// SumRange::inside_int, else (and for float input, NaN or infinite weights) SumRange::any.
template <class In, int Radius, bool Separable, int Count>
__host__ SumRange fast_sum_range(const FilterTaps<Count>& taps, float delta) {
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
    const double bound = (delta < 0 ? -double{delta} : double{delta}) +
                         static_cast<double>(std::numeric_limits<In>::max()) * gain;
    if (bound < 4194304.0) return SumRange::small;         // false for NaN
    if (bound < 1073741824.0) return SumRange::inside_int;
    return SumRange::any;
  }
}

/// kVec elements of T as one aligned access (vector load/store when the alignment allows).
template <class T, int N>
struct alignas(N * sizeof(T) >= 16 ? 16 : N * sizeof(T)) ElementVector {
  T v[N];
};

/// One vector store of a finished row. 8- and 16-bit results are streamed (st.global.cs: evict
/// first, nothing reads them back); on an H100 that made 8U 3x3 and 5x5 4% faster, while f32 got
/// slower, so float results keep plain stores.
template <class T, int N>
__device__ __forceinline__ void store_vector(T* out, const ElementVector<T, N>& value) {
  constexpr std::size_t kBytes = sizeof(ElementVector<T, N>);
  if constexpr (sizeof(T) <= 2 && kBytes == 16) {
    int4 bits;
    memcpy(&bits, &value, kBytes);
    __stcs(reinterpret_cast<int4*>(out), bits);
  } else if constexpr (sizeof(T) <= 2 && kBytes == 8) {
    int2 bits;
    memcpy(&bits, &value, kBytes);
    __stcs(reinterpret_cast<int2*>(out), bits);
  } else {
    *reinterpret_cast<ElementVector<T, N>*>(out) = value;
  }
}

/// How long L2 should keep the lines of a row the direct path loads (createpolicy operands).
enum class RowReuse {
  once,        ///< no hint: read by this strip alone
  again,       ///< evict_last: the strip above reads this row too, usually later
  done,        ///< evict_first: the strip below read this row already, usually earlier
};

/// A 64-bit L2 cache policy for ld.global's cache_hint: evict_last or evict_first on all lines.
__device__ __forceinline__ unsigned long long l2_policy(RowReuse reuse) {
  unsigned long long policy;
  if (reuse == RowReuse::again) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  } else {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  }
  return policy;
}

/// load_chunk with an L2 eviction policy (l2_policy) on the lines it reads.
template <class Chunk>
__device__ __forceinline__ Chunk load_chunk(const Chunk* address, unsigned long long policy) {
  Chunk chunk;
  if constexpr (sizeof(Chunk) == 16) {
    uint4 bits;
    asm volatile("ld.global.nc.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w)
                 : "l"(address), "l"(policy));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else if constexpr (sizeof(Chunk) == 8) {
    uint2 bits;
    asm volatile("ld.global.nc.L2::cache_hint.L2::256B.v2.u32 {%0, %1}, [%2], %3;"
                 : "=r"(bits.x), "=r"(bits.y)
                 : "l"(address), "l"(policy));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else {
    chunk = *address;
  }
  return chunk;
}

/// One aligned chunk of an input row. 8- and 16-byte chunks load through the read-only path with
/// a 256-byte L2 prefetch hint (each row is read once, front to back): on an H100 that made f32
/// 3x3 2% and 8U 3x3 3% faster than plain loads, and plain __ldg gained nothing.
template <class Chunk>
__device__ __forceinline__ Chunk load_chunk(const Chunk* address) {
  Chunk chunk;
  if constexpr (sizeof(Chunk) == 16) {
    uint4 bits;
    asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w)
                 : "l"(address));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else if constexpr (sizeof(Chunk) == 8) {
    uint2 bits;
    asm volatile("ld.global.nc.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(bits.x), "=r"(bits.y) : "l"(address));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else {
    chunk = *address;
  }
  return chunk;
}

/// How a loaded row lives in registers. 8- and 16-bit elements stay packed, 4 or 2 to a 32-bit
/// word, and are widened one at a time by a byte permute and one FADD (`widen`): I2F runs at 16
/// results per clock per SM on sm_90, an eighth of the FFMA rate, and byte-typed register arrays
/// made the compiler shuffle bytes between rows with extra PRMTs.
template <class In>
struct PackedElements {
  static constexpr bool kPacked = std::is_integral_v<In> && sizeof(In) < 4;
  using Word = std::conditional_t<kPacked, unsigned, In>;
  static constexpr int kPerWord = static_cast<int>(sizeof(Word) / sizeof(In));
  static_assert(!kPacked || std::is_unsigned_v<In>, "widen() zero-extends: unsigned elements only");

  /// Element k of word `w` as float (k is a compile-time value after unrolling).
  __device__ __forceinline__ static float widen(Word w, int k) {
    if constexpr (kPacked) {
      // __byte_perm picks result byte i by nibble i: 0-3 the word's bytes, 4-7 those of
      // 0x4B000000 (4-6 are zero, 7 is 0x4B, the exponent of 2^23). The result is the float
      // 2^23 + x, exact for x < 2^23; the FADD takes the 2^23 away, exactly.
      const unsigned selector = sizeof(In) == 1 ? 0x7440u | static_cast<unsigned>(k)
                                                : (k == 0 ? 0x7410u : 0x7432u);
      return __fsub_rn(__uint_as_float(__byte_perm(w, 0x4B000000u, selector)), 8388608.0f);
    } else {
      return static_cast<float>(w);
    }
  }

  /// Word `w` with element k replaced by `value` (used by the border path only).
  __device__ __forceinline__ static Word insert(Word w, int k, In value) {
    if constexpr (kPacked) {
      constexpr unsigned kMask = (1u << (8 * sizeof(In))) - 1u;
      const int shift = 8 * static_cast<int>(sizeof(In)) * k;
      return (w & ~(kMask << shift)) | (static_cast<unsigned>(value) << shift);
    } else {
      return value;
    }
  }
};

/// Element e (any integer) of a row of `width` interleaved pixels, mapped into the row by the
/// border rule; -1: the constant border. Not inlined: inlining the rule at each element that
/// needs it multiplied compile time and code size (8U RGB 5x5: 4640 -> 16456 SASS instructions
/// with an inline form). It returns a position, not the element, so loads do not wait in line
/// behind calls (docs/perf-notes.md section 20). The halo of the lanes at a row's ends (edge
/// words, staged chunks beyond the row) takes positions found once per thread; only a chunk of
/// a lane's own that crosses the row's end (widths not a multiple of the chunk) calls it per
/// row (section 21).
template <int Channels>
__device__ __noinline__ int fast_border_index(int e, int width, BorderRule rule) {
  const int channel = ((e % Channels) + Channels) % Channels;
  const int x = (e - channel) / Channels;  // exact: e - channel is a multiple of C
  const int xx = interpolate_border(x, width, rule);
  return xx < 0 ? -1 : xx * Channels + channel;
}

/// Elements of image row yy (already mapped by the border rule; -1: constant) at positions
/// position(t), t in [0, N), handed to `take(t, element t)`: position -1 is the constant border,
/// -2 an element not read (In{} is handed). The loads do not wait for one another.
template <class In, int N, class Position, class Take>
__device__ __forceinline__ void fast_border_loads(const PlaneView<const In>& src, int yy, const ConvParams& p,
                                                  Position&& position, Take&& take) {
  const In constant = static_cast<In>(p.border_value);  // border_value is already saturated to In: exact
  if (yy < 0) {
#pragma unroll
    for (int t = 0; t < N; ++t) take(t, constant);
    return;
  }
  const In* row = src.row(yy);
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int at = position(t);
    take(t, at == -2 ? In{} : at < 0 ? constant : __ldg(row + at));
  }
}

/// Elements [first, first + N) of image row yy (already mapped by the border rule; -1: constant)
/// through the border rule, handed to `take(t, element t)`: the positions first
/// (fast_border_index), then the loads (fast_border_loads). Used per row only by a chunk of a
/// lane's own that crosses the row's end; the halo of the row-end lanes takes positions found
/// once (fast_kernel).
template <class In, int Channels, int N, class Take>
__device__ __forceinline__ void fast_border_elements(const PlaneView<const In>& src, int first, int yy,
                                                     const ConvParams& p, Take&& take) {
  // Four at a time, each element handed on as it arrives: all N positions and elements held at
  // once raised 8U 3x3 from 80 to 96 registers (ptxas, sm_90).
  constexpr int kGroup = 4;
#pragma unroll
  for (int g = 0; g < N; g += kGroup) {
    constexpr int kCount = N < kGroup ? N : kGroup;
    int position[kCount];
#pragma unroll
    for (int t = 0; t < kCount; ++t)
      position[t] = g + t < N && yy >= 0
                        ? fast_border_index<Channels>(first + g + t, src.width, p.border)
                        : -2;
    fast_border_loads<In, kCount>(
        src, yy, p, [&](int t) { return position[t]; },
        [&](int t, In element) {
          if (g + t < N) take(g + t, element);
        });
  }
}

/// Shared-memory slots per warp for rows staged by cp.async (fast_stages_rows): kFastStages - 2
/// rows are in flight while one is filtered, and one slot of slack lets a single __syncwarp per
/// row order the reads of a slot before its next fill. On an H100 (docs/perf-notes.md section 13)
/// 8 slots were the fastest of 4, 6 and 8, or within 2% of it, in every case timed; 6 were up to
/// 7% slower (8U 15x15).
inline constexpr int kFastStages = 8;

/// Whether fast_kernel stages its input rows in shared memory (else each thread loads its window
/// straight into registers, one or two rows ahead). Staging keeps six rows in flight without
/// holding registers and reads the halo from shared memory: on an H100 it made every filter from
/// 7x7 on 1.05-2.5x faster, and 8U RGB 5x5 7%, but memory-bound small filters 2-7% slower (the
/// copy through shared memory costs more than it hides there). So: from radius 3, or from a halo
/// of 6 elements each side (3-channel 5x5, 4-channel 5x5).
template <int Channels, int Radius>
__host__ __device__ constexpr bool fast_stages_rows() {
  return Radius >= 3 || Radius * Channels >= 6;
}

/// cp.async of one 4-, 8- or 16-byte chunk from global to shared memory, with a 256-byte L2
/// prefetch (rows are read front to back); 16-byte chunks bypass L1 (the halo overlap is read
/// from the shared slot, not from L1).
template <class Chunk>
__device__ __forceinline__ void copy_async(Chunk* shared_destination, const Chunk* global_source) {
  static_assert(sizeof(Chunk) == 4 || sizeof(Chunk) == 8 || sizeof(Chunk) == 16, "cp.async copies 4, 8 or 16 bytes");
  const auto destination = static_cast<unsigned>(__cvta_generic_to_shared(shared_destination));
  if constexpr (sizeof(Chunk) == 16) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(destination), "l"(global_source)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], %2;" ::"r"(destination), "l"(global_source),
                 "n"(sizeof(Chunk))
                 : "memory");
  }
}

/// Closes this thread's group of cp.async copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

/// Waits until at most `Pending` of this thread's committed cp.async groups are still in flight.
template <int Pending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

/// Thread (tx, ty) of block (bx, by) computes elements [e0, e0 + kVec) of the flattened row,
/// e0 = ((bx * 4 + ty) * 32 + tx) * kVec, for image rows [s0, s0 + strip_rows) with
/// s0 = by' * strip_rows, by' = by, by + gridDim.y, ... Tile of a block: 128 * kVec elements x
/// strip_rows rows (fast_strip_rows_for). The four warps walk the same rows side by side, so each
/// row is read as one contiguous span of 128 * kVec elements (DRAM pages stay open) rather than
/// four spans far apart. A thread's window of a row is its own chunk of kVec elements and
/// kSideVectors chunks each side, read either
///  - straight into registers (small filters, kSideVectors = 1), two rows ahead: each lane loads
///    its own chunk, takes the halo words of its neighbours' chunks by shuffle, and lanes 0 and
///    31 load the halo words beyond the warp's span, or
///  - from shared memory (fast_stages_rows): each warp stages its rows (its 32 chunks plus
///    kSideVectors chunks each side; lane l copies chunk l, and chunk 32 + l when l < 2S) with
///    cp.async into a ring of kFastStages slots, kFastStages - 2 rows ahead. Warps stay
///    independent: one __syncwarp per row, no block barrier.
/// Chunks (and edge words) not wholly inside the row, and rows of a constant border, go element
/// by element through the border rule; rows outside the image are mapped by it first.
/// sum_range: what is known of every output sum's range (fast_sum_range): integer results round
/// without cvRound's out-of-range rule inside int's range, and 8-bit ones without a clamp when
/// the sums are small.
/// @tparam Channels interleaved channels (tap stride); @tparam Radius (2R+1)^2 centred filter.
template <class In, class Out, int Channels, int Radius, bool Separable>
__global__ void __launch_bounds__(kFastThreads)
    fast_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p,
                FilterTaps<Separable ? 2 * (2 * Radius + 1) : (2 * Radius + 1) * (2 * Radius + 1)> taps,
                bool keep_alpha, bool vector_aligned, int strip_rows, SumRange sum_range) {
  constexpr int K = 2 * Radius + 1;
  constexpr int kVec = fast_vector_elems<In, Radius>();
  constexpr int kHalo = Radius * Channels;                  // elements each side
  constexpr int kSideVectors = (kHalo + kVec - 1) / kVec;   // neighbour chunks each side
  constexpr int kWindow = (2 * kSideVectors + 1) * kVec;    // elements a thread reads per row
  constexpr int kFirstTap = kSideVectors * kVec - kHalo;    // window index of tap 0 of element 0
  constexpr int kChunks = 2 * kSideVectors + 1;             // chunks a thread reads per row
  constexpr bool kStaged = fast_stages_rows<Channels, Radius>();
  constexpr int kSlotChunks = kFastBlockX + 2 * kSideVectors;  // chunks of one staged warp row
  constexpr int kAhead = kFastStages - 2;                      // staged rows in flight
  constexpr bool kPacksU8 = std::is_same_v<Out, unsigned char> && kVec % 4 == 0;  // round_pack_u8x4
  // Input rows a step of the strip walk adds (process_row). Separable staged filters take two:
  // the partial rows' register moves per row halve, and on an H100 ptxas kept the separable
  // 15x15 at 96 registers instead of 120. At base clocks (ncu) it issued 15% fewer instructions;
  // at boost, with 64-row strips (fast_strip_rows_for), 1.02 -> 0.96 ms at 16384^2 (perf-notes
  // section 19). Dense filters keep one (their moves are K x kVec a row against K^2 x kVec
  // FFMAs; not timed with two).
  constexpr int kRowsPerStep = Separable && kStaged ? 2 : 1;

  // A row lives in registers in the input type, packed (8 u8 elements in two words; widened to
  // float only while they are used): element t of a chunk is element t % kPerWord of word
  // chunk.v[t / kPerWord].
  using Packing = PackedElements<In>;
  constexpr int kPerWord = Packing::kPerWord;
  static_assert(kVec % kPerWord == 0, "a chunk holds whole words");
  using Chunk = ElementVector<typename Packing::Word, kVec / kPerWord>;
  __shared__ Chunk staged[kStaged ? kFastBlockY : 1][kStaged ? kFastStages : 1][kStaged ? kSlotChunks : 1];

  const int lane = threadIdx.x;
  const int row_elems = src.width * Channels;
  const int warp_e0 = (blockIdx.x * kFastBlockY + threadIdx.y) * kFastBlockX * kVec;
  const int e0 = warp_e0 + lane * kVec;
  // Whole warps leave (their lanes share shuffles or barriers); lanes past the row end stay to
  // read halo chunks for their neighbours.
  if (warp_e0 >= row_elems) return;
  const bool has_output = e0 < row_elems;
  const bool full_store = vector_aligned && e0 + kVec <= row_elems;
  const int strips = div_up(src.height, strip_rows);

  // Direct: a row is this thread's own chunk plus, for lanes 0 and 31, the halo words beyond the
  // warp's span (left of lane 0, right of lane 31); the other halo words come from the neighbour
  // lanes' own chunks by shuffle in fetch_row. One load per thread and row instead of 2S + 1:
  // the neighbour loads hit L1, but their wavefronts were the limiter of f32 3x3 (ncu: 22 of 26
  // cycles between a warp's instructions waiting on L1TEX).
  static_assert(kStaged || kSideVectors == 1, "the direct path shuffles one neighbour chunk each side");
  // The taps read kHalo elements of each neighbour chunk: words [kLeftWord, kWords) of the left
  // one and [0, kEdgeWords) of the right one. Lane 0 loads the left words itself, lane 31 the
  // right ones (kEdgeWords words, not a whole chunk: fewer registers).
  constexpr int kWords = kVec / kPerWord;
  constexpr int kEdgeWords = (kHalo + kPerWord - 1) / kPerWord;
  constexpr int kLeftWord = kWords - kEdgeWords;
  using Word = typename Packing::Word;
  struct DirectRow {
    Chunk own;
    Word edge[kEdgeWords];
  };
  // Lane 0's left words are always read (the warp has an output); lane 31's right words only when
  // lane 31 has an output (on tiny images the border rule far past the row end is slow).
  const bool edge_lane = lane == 0 || (lane == kFastBlockX - 1 && has_output);
  const int edge_first = lane == 0 ? e0 - (kEdgeWords * kPerWord) : e0 + kVec;  // element of edge[0]
  // The taps read the last kHalo elements of lane 0's edge words and the first kHalo of lane 31's.
  const int edge_used_from = lane == 0 ? kEdgeWords * kPerWord - kHalo : 0;
  const int edge_used_to = lane == 0 ? kEdgeWords * kPerWord : kHalo;
  // Lanes more than one chunk past the row end read nothing: nobody uses their chunk (and on tiny
  // images the border rule far past the row cost 3-10x the kernel).
  const bool own_needed = e0 < row_elems + kVec;
  const bool own_inside = vector_aligned && e0 + kVec <= row_elems;
  const bool edge_inside = vector_aligned && edge_first >= 0 && edge_first + kEdgeWords * kPerWord <= row_elems;
  // Element t of `words`, as fast_border_loads and fast_border_elements hand it on.
  const auto into_words = [](Word* words) {
    return [words](int t, In element) {
      words[t / kPerWord] = Packing::insert(t % kPerWord == 0 ? Word{} : words[t / kPerWord], t % kPerWord, element);
    };
  };
  // Where an edge lane's words are not wholly inside the row (at the row's ends), the positions
  // the border rule gives the elements its taps read: the same in every row, so found once here
  // (at most kHalo + 3 registers) rather than per row by calls while the warp waits. Per row they
  // cost 14% at 8U 5x5 4096^2 (docs/perf-notes.md section 21).
  constexpr int kEdgeElems = kEdgeWords * kPerWord;
  int edge_position[kStaged ? 1 : kEdgeElems]{};
  if constexpr (!kStaged) {
#pragma unroll
    for (int t = 0; t < kEdgeElems; ++t)
      edge_position[t] = edge_lane && !edge_inside && t >= edge_used_from && t < edge_used_to
                             ? fast_border_index<Channels>(edge_first + t, src.width, p.border)
                             : -2;
  }
  // Rows shared by two strips (the first and last K - 1 of each) are read twice, by blocks that
  // usually run at the same time: the strip below reads them first (its warm-up), the strip above
  // at its end. The first reader asks L2 to keep them, the second to drop them. Without the hint
  // they missed L2 (ncu: f32 3x3 read 2.25 GB where 2.15 is the image in and out); with it f32
  // 3x3 at 16384^2 ran 0.858 -> 0.816 ms (perf-notes section 15). Only f32 images: 8U sizes are
  // bound by instruction issue, and the hint's branch made 8U 5x5 3% slower. Hinting every row,
  // or the rows staged by cp.async for larger filters, was slower too.
  constexpr bool kHintsL2 = std::is_same_v<In, float>;
  const unsigned long long keep_in_l2 = l2_policy(RowReuse::again);
  const unsigned long long drop_from_l2 = l2_policy(RowReuse::done);
  auto read_own = [&](int yy, Chunk& chunk, RowReuse reuse) {
    if (own_inside && yy >= 0) {
      const Chunk* from = reinterpret_cast<const Chunk*>(src.row(yy) + e0);
      if (reuse == RowReuse::once) {
        chunk = load_chunk(from);
      } else {
        chunk = load_chunk(from, reuse == RowReuse::again ? keep_in_l2 : drop_from_l2);
      }
    } else {
      fast_border_elements<In, Channels, kVec>(src, e0, yy, p, into_words(chunk.v));
    }
  };
  auto read_edge = [&](int yy, Word (&edge)[kEdgeWords]) {
    if (edge_inside && yy >= 0) {
      const Word* from = reinterpret_cast<const Word*>(src.row(yy) + edge_first);
#pragma unroll
      for (int w = 0; w < kEdgeWords; ++w) edge[w] = __ldg(from + w);
    } else {
      fast_border_loads<In, kEdgeElems>(src, yy, p, [&](int t) { return edge_position[t]; }, into_words(edge));
    }
  };
  auto load_row = [&](int y, DirectRow& row, RowReuse reuse) {
    // interpolate_border makes the same in-range test; calling it alone changed the SASS of every
    // instantiation (not timed), so the common case stays spelled out here.
    const int yy = static_cast<unsigned>(y) < static_cast<unsigned>(src.height) ? y
                                                                                : interpolate_border(y, src.height, p.border);
    if (own_needed) read_own(yy, row.own, reuse);
    if (edge_lane) read_edge(yy, row.edge);
  };

  // Staged: input row y (any y) into this warp's slot `slot`: lane l fills chunk l, and chunk
  // 32 + l when l < 2S. Chunks past the right halo of the last lane with an output are not read
  // and are left alone (on tiny images their border-rule fill cost 10x the kernel).
  Chunk (&ring)[kStaged ? kFastStages : 1][kStaged ? kSlotChunks : 1] = staged[kStaged ? threadIdx.y : 0];
  const int slot_start = warp_e0 - kSideVectors * kVec;  // element of a slot's chunk 0
  constexpr int kStagePasses = (kSlotChunks + kFastBlockX - 1) / kFastBlockX;  // chunks per lane
  bool chunk_inside[kStagePasses];  // the chunk lies wholly inside the row (vector copy)
  bool chunk_needed[kStagePasses];  // some lane with an output reads it
#pragma unroll
  for (int i = 0; i < kStagePasses; ++i) {
    const int first = slot_start + (i * kFastBlockX + lane) * kVec;
    chunk_inside[i] = vector_aligned && first >= 0 && first + kVec <= row_elems;
    chunk_needed[i] = i * kFastBlockX + lane < kSlotChunks && first < row_elems + kSideVectors * kVec;
  }
  // The border rule's positions of the elements of this lane's chunks that are needed but not
  // wholly inside the row: the same in every row, so found once here (as edge_position on the
  // direct path). In shared memory, lane-minor: kVec registers a chunk would cost blocks an SM.
  // Per row they cost 23% at 8U RGB 5x5 4096^2 (docs/perf-notes.md section 21).
  __shared__ int staged_position[kStaged ? kFastBlockY : 1][kStaged ? kStagePasses * kVec : 1][kFastBlockX];
  int(&chunk_position)[kStaged ? kStagePasses * kVec : 1][kFastBlockX] = staged_position[kStaged ? threadIdx.y : 0];
  if constexpr (kStaged) {
#pragma unroll
    for (int i = 0; i < kStagePasses; ++i) {
      if (!chunk_needed[i] || chunk_inside[i]) continue;
      const int first = slot_start + (i * kFastBlockX + lane) * kVec;
#pragma unroll
      for (int t = 0; t < kVec; ++t)
        chunk_position[i * kVec + t][lane] = fast_border_index<Channels>(first + t, src.width, p.border);
    }
  }
  auto stage_row = [&](int y, int slot) {
    const int yy = interpolate_border(y, src.height, p.border);
#pragma unroll
    for (int i = 0; i < kStagePasses; ++i) {
      const int c = i * kFastBlockX + lane;
      if (!chunk_needed[i]) break;
      const int first = slot_start + c * kVec;
      if (chunk_inside[i] && yy >= 0) {
        copy_async(&ring[slot][c], reinterpret_cast<const Chunk*>(src.row(yy) + first));
      } else {
        In* elements = reinterpret_cast<In*>(&ring[slot][c]);  // element stores: no Chunk temporary
        fast_border_loads<In, kVec>(
            src, yy, p, [&](int t) { return chunk_position[i * kVec + t][lane]; },
            [&](int t, In element) { elements[t] = element; });
      }
    }
  };

  for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
    const int s0 = strip * strip_rows;
    const int rows_out = min(strip_rows, src.height - s0);
    const int first_input_row = s0 - p.anchor_y;
    const int input_rows = rows_out + K - 1;
    const auto reuse_of_row = [&](int r) {  // strip row r: the direct path's L2 hint (read_own)
      if (!kHintsL2) return RowReuse::once;
      return r < K - 1 ? RowReuse::again : r >= input_rows - (K - 1) ? RowReuse::done : RowReuse::once;
    };

    // Direct: two rows in flight (`window` = row r, `ahead` = row r + 1 while row r + 2 loads);
    // a row is at most 32 bytes a thread. More rows were slower (perf-notes section 14).
    DirectRow window{};  // defined words also for lanes that read nothing (own_needed)
    DirectRow ahead{};
    if constexpr (kStaged) {
      __syncwarp();  // every lane has read the previous strip's slots
#pragma unroll
      for (int a = 0; a < kAhead; ++a) {
        if (a < input_rows) stage_row(first_input_row + a, a);
        copy_async_commit();  // empty groups too: the group count stays one per row
      }
    } else {
      load_row(first_input_row, window, reuse_of_row(0));
      if (input_rows > 1) load_row(first_input_row + 1, ahead, reuse_of_row(1));
    }

    // Row r of the strip as float: in[t] is element e0 - kSideVectors * kVec + t of input row r.
    auto fetch_row = [&](int r, float (&in)[kWindow]) {
      if constexpr (kStaged) {
        if (r + kAhead < input_rows) stage_row(first_input_row + r + kAhead, (r + kAhead) % kFastStages);
        copy_async_commit();
        copy_async_wait<kAhead>();  // row r's copies of this lane have landed,
        __syncwarp();               // and every lane's (also: slot r - 1 is read by all)
        const Chunk* slot = &ring[r % kFastStages][lane];
#pragma unroll
        for (int v = 0; v < kChunks; ++v) {
          const Chunk chunk = slot[v];
#pragma unroll
          for (int t = 0; t < kVec; ++t) in[v * kVec + t] = Packing::widen(chunk.v[t / kPerWord], t % kPerWord);
        }
      } else {
        // Halo words from the neighbour lanes (lanes 0 and 31: their edge words).
        constexpr unsigned kWarp = 0xffffffffu;
        Chunk left, right;
#pragma unroll
        for (int w = kLeftWord; w < kWords; ++w) {
          const auto from_left = __shfl_up_sync(kWarp, window.own.v[w], 1);
          left.v[w] = lane == 0 ? window.edge[w - kLeftWord] : from_left;
        }
#pragma unroll
        for (int w = 0; w < kEdgeWords; ++w) {
          const auto from_right = __shfl_down_sync(kWarp, window.own.v[w], 1);
          right.v[w] = lane == kFastBlockX - 1 ? window.edge[w] : from_right;
        }
#pragma unroll
        for (int t = kFirstTap; t < kVec; ++t) in[t] = Packing::widen(left.v[t / kPerWord], t % kPerWord);
#pragma unroll
        for (int t = 0; t < kVec; ++t) in[kVec + t] = Packing::widen(window.own.v[t / kPerWord], t % kPerWord);
#pragma unroll
        for (int t = 0; t < kHalo; ++t) in[2 * kVec + t] = Packing::widen(right.v[t / kPerWord], t % kPerWord);
        window = ahead;
        if (r + 2 < input_rows) load_row(first_input_row + r + 2, ahead, reuse_of_row(r + 2));
      }
    };

    // partial[q][k]: output row (r0 - (K - 1) + q) before the step's first input row r0 is
    // added; the step's row r0 + Phase completes partial[Phase]. After a step the partial rows
    // shift down kRowsPerStep registers ((K - 1) x kVec moves a step).
    float partial[K + kRowsPerStep - 1][kVec];
#pragma unroll
    for (int q = 0; q < K + kRowsPerStep - 1; ++q)
#pragma unroll
      for (int k = 0; k < kVec; ++k) partial[q][k] = p.delta;

    // Row r = r0 + Phase of the strip: adds into partial[Phase .. Phase + K - 1] and writes
    // partial[Phase], output row r - (K - 1). A ring unrolled by K (one copy of the row body per
    // phase, no moves) ran slower: its K copies overflowed the instruction cache (ncu, separable
    // 15x15 f32: 1.6 of 6 cycles between a warp's instructions waiting on instruction fetch; 1.11
    // ms against 1.04 rolled, one row a step).
    auto process_row = [&](int r, auto phase) {
      constexpr int Phase = decltype(phase)::value;
      float in[kWindow];
      fetch_row(r, in);
      if constexpr (Separable) {
        float horizontal[kVec];
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          float h = 0.0f;
#pragma unroll
          for (int j = 0; j < K; ++j) h = fmaf(taps.w[j], in[kFirstTap + k + j * Channels], h);
          horizontal[k] = h;
        }
#pragma unroll
        for (int q = 0; q < K; ++q)
#pragma unroll
          for (int k = 0; k < kVec; ++k)
            partial[Phase + q][k] = fmaf(taps.w[K + (K - 1 - q)], horizontal[k], partial[Phase + q][k]);
      } else {
#pragma unroll
        for (int q = 0; q < K; ++q)
#pragma unroll
          for (int j = 0; j < K; ++j)
#pragma unroll
            for (int k = 0; k < kVec; ++k)
              partial[Phase + q][k] =
                  fmaf(taps.w[(K - 1 - q) * K + j], in[kFirstTap + k + j * Channels], partial[Phase + q][k]);
      }
      const float (&finished)[kVec] = partial[Phase];

      const int out_row = r - (K - 1);
      if (out_row >= 0 && has_output) {
        const int y = s0 + out_row;
        Out* out = dst.row(y) + e0;
        ElementVector<Out, kVec> result;
        if (sum_range != SumRange::any && kPacksU8) {
          const bool clamp_low = sum_range != SumRange::small;
#pragma unroll
          for (int w = 0; w < kVec / 4; ++w) {
            const unsigned word = round_pack_u8x4(clamp_low, finished[4 * w], finished[4 * w + 1],
                                                  finished[4 * w + 2], finished[4 * w + 3]);
            memcpy(&result.v[4 * w], &word, 4);
          }
        } else if (sum_range != SumRange::any) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) result.v[k] = saturate_inside_int<Out>(finished[k]);
        } else {
#pragma unroll
          for (int k = 0; k < kVec; ++k) result.v[k] = saturate_from_float<Out>(finished[k]);
        }
        if (Channels == 4 && keep_alpha) {  // alpha passes through, converted to the output type
          const In* centre = src.row(y) + e0;
#pragma unroll
          for (int k = 0; k < kVec; ++k)
            if ((e0 + k) % 4 == 3 && e0 + k < row_elems) result.v[k] = saturate_from_float<Out>(static_cast<float>(centre[k]));
        }
        if (full_store) {
          store_vector(out, result);
        } else {
#pragma unroll
          for (int k = 0; k < kVec; ++k)
            if (e0 + k < row_elems) out[k] = result.v[k];
        }
      }
    };

#pragma unroll 1
    for (int r0 = 0; r0 < input_rows; r0 += kRowsPerStep) {
      process_row(r0, std::integral_constant<int, 0>{});
      if constexpr (kRowsPerStep == 2) {
        if (r0 + 1 < input_rows) process_row(r0 + 1, std::integral_constant<int, 1>{});
      }
#pragma unroll
      for (int q = 0; q + 1 < K; ++q)
#pragma unroll
        for (int k = 0; k < kVec; ++k) partial[q][k] = partial[q + kRowsPerStep][k];
#pragma unroll
      for (int q = K - 1; q < K + kRowsPerStep - 1; ++q)
#pragma unroll
        for (int k = 0; k < kVec; ++k) partial[q][k] = p.delta;
    }
  }
}

inline constexpr int kFastGenericBlockX = 32;
inline constexpr int kFastGenericBlockY = 8;
inline constexpr int kFastGenericThreads = kFastGenericBlockX * kFastGenericBlockY;

/// Any filter size and anchor on interleaved rows: thread (tx, ty) of block (bx, by) computes
/// element bx * 32 + tx of row by' * 8 + ty (by' = by, by + gridDim.y, ...); weights from global
/// memory (one broadcast load per tap for the whole warp).
template <class In, class Out>
__global__ void __launch_bounds__(kFastGenericThreads)
    fast_generic_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, int channels,
                        const float* __restrict__ weights, bool keep_alpha) {
  const int row_elems = src.width * channels;
  const int e = blockIdx.x * kFastGenericBlockX + threadIdx.x;
  if (e >= row_elems) return;
  const int channel = e % channels;
  const int x = e / channels;
  const int tile_rows = div_up(src.height, kFastGenericBlockY);
  for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
    const int y = tile_row * kFastGenericBlockY + threadIdx.y;
    if (y >= src.height) continue;
    float acc = p.delta;
    if (keep_alpha && channel == 3) {
      acc = static_cast<float>(src.row(y)[e]);
    } else if (window_inside(x, y, p.kw, p.kh, src.width, src.height, p)) {
      for (int i = 0; i < p.kh; ++i) {
        const In* in = src.row(y - p.anchor_y + i) + (x - p.anchor_x) * channels + channel;
        for (int j = 0; j < p.kw; ++j) acc = fmaf(__ldg(weights + i * p.kw + j), static_cast<float>(in[j * channels]), acc);
      }
    } else {
      for (int i = 0; i < p.kh; ++i) {
        const int yy = interpolate_border(y - p.anchor_y + i, src.height, p.border);
        for (int j = 0; j < p.kw; ++j) {
          const int xx = interpolate_border(x - p.anchor_x + j, src.width, p.border);
          const float v = (yy < 0 || xx < 0) ? p.border_value
                                             : static_cast<float>(src.row(yy)[xx * channels + channel]);
          acc = fmaf(__ldg(weights + i * p.kw + j), v, acc);
        }
      }
    }
    dst.row(y)[e] = saturate_from_float<Out>(acc);
  }
}

}  // namespace cuconv::kernels
