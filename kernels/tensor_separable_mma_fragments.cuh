// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_separable_mma_fragments.cuh
/// Warp-level pieces of `tensor`'s both-passes kernel (tensor_separable_mma.cuh): a Toeplitz A
/// fragment built from a function of its entries, a float pair split into FP16 high and low
/// parts (the row sums handed from the horizontal MMAs to the vertical ones), and a lane's output
/// bytes of C channel tiles interleaved back into pixel order and stored.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cuconv::kernels {

namespace tensor_mma_detail {

/// A fragment (m16n8k16, row-major A) of the 16x16 block whose entry (m, k) is entry(m, k):
/// registers {A[g][2t..]}, {A[g+8][2t..]}, {A[g][2t+8..]}, {A[g+8][2t+8..]}, lane = 4g + t; each
/// XORed with zero[r].
template <class Entry>
__device__ __forceinline__ void a_fragment(const Entry& entry, int lane, const unsigned* zero, unsigned (&a)[4]) {
  const int g = lane >> 2;
  const int t = lane & 3;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int m = g + 8 * (r & 1);
    const int k = 2 * t + 8 * (r >> 1);
    a[r] = (entry(m, k) | (entry(m, k + 1) << 16)) ^ zero[r];
  }
}

/// Two floats as an FP16 pair hi (rounded to nearest) and the pair of what hi leaves, lo.
__device__ __forceinline__ void split_half2(float x0, float x1, unsigned& hi, unsigned& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 back = __half22float2(h);
  const __half2 l = __floats2half2_rn(x0 - back.x, x1 - back.y);
  hi = *reinterpret_cast<const unsigned*>(&h);
  lo = *reinterpret_cast<const unsigned*>(&l);
}

/// A lane's results of C channel tiles (word c: channel c's bytes of pixels p, p + 1 in row g, then
/// in row g + 8) interleaved back into pixel order and stored: 2C bytes at `row_g` and at
/// `row_g8` (2C-byte aligned).
template <int C>
__device__ __forceinline__ void store_interleaved(const unsigned (&word)[C], std::uint8_t* row_g,
                                                  std::uint8_t* row_g8) {
  if constexpr (C == 1) {
    *reinterpret_cast<unsigned short*>(row_g) = static_cast<unsigned short>(word[0]);
    *reinterpret_cast<unsigned short*>(row_g8) = static_cast<unsigned short>(word[0] >> 16);
  } else if constexpr (C == 3) {
    // Row g's six bytes p c0, p c1 | p c2, p+1 c0 | p+1 c1, p+1 c2 in the low halves, row g + 8's in the high.
    const unsigned pairs[3] = {__byte_perm(word[0], word[1], 0x6240u), __byte_perm(word[2], word[0], 0x7250u),
                               __byte_perm(word[1], word[2], 0x7351u)};
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      reinterpret_cast<unsigned short*>(row_g)[k] = static_cast<unsigned short>(pairs[k]);
      reinterpret_cast<unsigned short*>(row_g8)[k] = static_cast<unsigned short>(pairs[k] >> 16);
    }
  } else {
    static_assert(C == 4, "1, 3 or 4 channels");
    const unsigned first01 = __byte_perm(word[0], word[1], 0x6240u);  // pixel p: c0, c1 of rows g, g + 8
    const unsigned first23 = __byte_perm(word[2], word[3], 0x6240u);
    const unsigned second01 = __byte_perm(word[0], word[1], 0x7351u);  // pixel p + 1
    const unsigned second23 = __byte_perm(word[2], word[3], 0x7351u);
    *reinterpret_cast<uint2*>(row_g) =
        make_uint2(__byte_perm(first01, first23, 0x5410u), __byte_perm(second01, second23, 0x5410u));
    *reinterpret_cast<uint2*>(row_g8) =
        make_uint2(__byte_perm(first01, first23, 0x7632u), __byte_perm(second01, second23, 0x7632u));
  }
}

}  // namespace tensor_mma_detail

}  // namespace cuconv::kernels
