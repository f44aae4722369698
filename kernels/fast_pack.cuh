// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_pack.cuh
/// `fast` (kernels/fast.cuh): how values travel in registers and leave the kernel. The weights
/// (FilterTaps), packed 8- and 16-bit input words (PackedElements), the vector of results a
/// thread stores (ElementVector, store_vector) and the rounding of four sums into four bytes
/// (round_pack_u8x4). Why each is so: bench/results/kernel-notes/fast.md, 'Packing and rounding'.
#include "common.cuh"

#include <cstring>
#include <limits>
#include <type_traits>

namespace cuconv::kernels {

/// What the launcher knows of every output sum of fast_kernel on 8- or 16-bit input (fast_sum_range
/// in src/gpu/launch/fast_rules.cuh), so that integer results round with fewer instructions.
enum class SumRange : int {
  any,         ///< no bound: cvRound's out-of-range rule (INT_MIN) applies
  inside_int,  ///< |sum| < 2^30: no out-of-range rule
  small,       ///< |sum| < 2^22: 8-bit results also skip the clamp before the rounding addition
};

/// Four ints saturated to bytes and packed, v0 in the low byte: two cvt.pack.sat, each of which
/// gives (c << 16) | (sat(a) << 8) | sat(b).
__device__ __forceinline__ unsigned pack_sat_u8x4(int v0, int v1, int v2, int v3) {
  unsigned high, word;
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(high) : "r"(v3), "r"(v2), "r"(0));
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(word) : "r"(v1), "r"(v0), "r"(high));
  return word;
}

/// Four sums rounded half to even and saturated to u8, packed into one word (first sum in the
/// low byte): the same bytes as saturate_inside_int<unsigned char>. Adding 1.5 * 2^23 leaves a
/// sum, rounded half to even, in the low mantissa bits; taking the float's bits less those of
/// 1.5 * 2^23 gives it as an int for |v| < 2^22, and sums >= 2^22 land beyond 255 and saturate.
/// cvt.pack.sat then saturates two ints to bytes at a time. Sums below -3 * 2^22 need the clamp
/// to -2^22 first (NaN gets it too, as in round_clamp_small_int): for v + 1.5 * 2^23 in
/// (-1.5 * 2^23, 0] the int would wrap. Sums known to lie above -2^22 (SumRange::small) skip it.
/// clamp_low is the same for a whole launch, so an argument costs what a template flag would.
/// Why packing and not byte permutes: bench/results/kernel-notes/fast.md, 'Packing and rounding'.
__device__ __forceinline__ unsigned round_pack_u8x4(bool clamp_low, float s0, float s1, float s2, float s3) {
  const auto rounded = [clamp_low](float v) {
    if (clamp_low) v = fmaxf(v, -4194304.0f);
    return __float_as_int(__fadd_rn(v, 12582912.0f)) - 0x4B400000;
  };
  return pack_sat_u8x4(rounded(s0), rounded(s1), rounded(s2), rounded(s3));
}

/// Filter weights passed by value: dense kh x kw row-major, or separable (kw horizontal then kh
/// vertical). Lives in the kernel's parameter constant bank.
template <int Count>
struct FilterTaps {
  float w[Count];
};

/// kVec elements of T as one aligned access (vector load/store when the alignment allows).
template <class T, int N>
struct alignas(N * sizeof(T) >= 16 ? 16 : N * sizeof(T)) ElementVector {
  T v[N];
};

/// One vector store of a finished row. 8- and 16-bit results are streamed (st.global.cs: evict
/// first, nothing reads them back); float results keep plain stores, which were faster for them
/// (bench/results/kernel-notes/fast.md, 'Stores').
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

/// How a loaded row lives in registers. 8- and 16-bit elements stay packed, 4 or 2 to a 32-bit
/// word, and are widened one at a time by a byte permute and one FADD (`widen`) rather than by
/// I2F, which issues at an eighth of the FFMA rate on sm_90; byte-typed register arrays made the
/// compiler shuffle bytes between rows (bench/results/kernel-notes/fast.md, 'Packing and rounding').
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
      const unsigned selector = sizeof(In) == 1 ? 0x7440u | static_cast<unsigned>(k) : (k == 0 ? 0x7410u : 0x7432u);
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

}  // namespace cuconv::kernels
