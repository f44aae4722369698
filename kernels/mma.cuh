// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file mma.cuh
/// The warp-level tensor-core pieces the `tensor` kernels share: FP16 MMAs with FP32
/// accumulation (m16n8k16), byte MMAs (u8 or s8 times s8) with exact 32-bit integer accumulation (m16n8k32), ldmatrix,
/// bytes to exact FP16 pairs and the final rounding to a byte. Fragment layouts are PTX's: lane
/// 4g + t holds A rows g and g + 8, B column g, C rows g and g + 8, columns 2t, 2t + 1; in FP16,
/// A columns and B rows 2t, 2t + 1, 2t + 8, 2t + 9; in bytes, 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3.
/// The launchers run these kernels on sm_80 and newer only; older targets trap.
#include <cuda_runtime.h>

namespace cuconv::kernels::tensor_detail {

/// acc += A (16x16) * B (16x8).
__device__ __forceinline__ void mma_f16_f32(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();
#endif
}

/// acc += A (16x32 bytes) * B (32x8 signed bytes); `First`: acc = A * B. `SignedA`: the A bytes
/// are signed (s8 x s8), else unsigned (u8 x s8).
template <bool First, bool SignedA = false>
__device__ __forceinline__ void mma_i8(int (&acc)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define CUCONV_MMA_I8(ATYPE)                                                              \
  if constexpr (First) {                                                                  \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." ATYPE                           \
                 ".s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "                        \
                 "{%10,%10,%10,%10};"                                                     \
                 : "=r"(acc[0]), "=r"(acc[1]), "=r"(acc[2]), "=r"(acc[3])                 \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0)); \
  } else {                                                                                \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." ATYPE                           \
                 ".s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "                        \
                 "{%0,%1,%2,%3};"                                                         \
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])                 \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));         \
  }
  if constexpr (SignedA) {
    CUCONV_MMA_I8("s8")
  } else {
    CUCONV_MMA_I8("u8")
  }
#undef CUCONV_MMA_I8
#else
  __trap();
#endif
}

/// Four 8x8 matrices of 16-bit elements from shared memory: lane l gives the address of row l % 8
/// of matrix l / 8 and receives row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of each.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&a)[4], const void* row_address) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(row_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(s));
#else
  __trap();
#endif
}

/// An FP16 pair from bytes in the low mantissa bits of 1024.0 (0x64 in each high byte): 1024
/// taken away leaves the bytes' values exactly.
__device__ __forceinline__ unsigned unbias_half2(unsigned biased) {
  unsigned r;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(biased), "r"(0x64006400u));
  return r;
}

/// v rounded half to even and saturated to [0, 255].
__device__ __forceinline__ unsigned round_to_byte(float v) {
  unsigned r;
  asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

/// Bytes 2i and 2i+1 of `w` (i = 0, 1) as an exact FP16 pair.
__device__ __forceinline__ unsigned bytes_to_half2(unsigned w, int i) {
  return unbias_half2(__byte_perm(w, 0x6464u, i == 0 ? 0x4140u : 0x4342u));
}

}  // namespace cuconv::kernels::tensor_detail
