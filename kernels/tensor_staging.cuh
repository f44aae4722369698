// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_staging.cuh
/// Staging pieces the separable `tensor` kernels share: where each staged column reads at a row's
/// ends (the border rule, found once a block), 16 bytes gathered through that map, and 16 bytes
/// (or 16 pixels of interleaved channels, one plane a channel) stored as exact FP16 values.
#include "common.cuh"
#include "mma.cuh"

#include <cstdint>

namespace cuconv::kernels::tensor_detail {

/// column_source[sc] for sc < count: the element that staged column sc (element first + sc of a
/// row of C interleaved channels) reads through the border rule, -1 for the constant border
/// value. The block's threads share the work.
template <int C>
__device__ __forceinline__ void build_column_map(int* column_source, int count, int first, int width,
                                                 BorderRule border) {
  for (int sc = static_cast<int>(threadIdx.x); sc < count; sc += static_cast<int>(blockDim.x)) {
    const int e = first + sc;
    const int x = e >= 0 ? e / C : -((-e + C - 1) / C);  // floor(e / C)
    const int xm = interpolate_border(x, width, border);
    column_source[sc] = xm < 0 ? -1 : xm * C + (e - x * C);
  }
}

/// Staged columns 16q .. 16q + 15 of `row` through the column map, four bytes a word.
__device__ __forceinline__ uint4 gather_columns(const std::uint8_t* row, const int* column_source, int q,
                                                unsigned border_byte) {
  unsigned words[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int from = column_source[16 * q + i];
    const unsigned byte = from >= 0 ? static_cast<unsigned>(__ldg(row + from)) : border_byte;
    words[i / 4] |= byte << (8 * (i % 4));
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

/// 16 bytes as 16 exact FP16 values at `out` (32-byte aligned).
__device__ __forceinline__ void store_as_halves(unsigned short* out, uint4 in) {
  auto* vectors = reinterpret_cast<uint4*>(out);
  vectors[0] =
      make_uint4(bytes_to_half2(in.x, 0), bytes_to_half2(in.x, 1), bytes_to_half2(in.y, 0), bytes_to_half2(in.y, 1));
  vectors[1] =
      make_uint4(bytes_to_half2(in.z, 0), bytes_to_half2(in.z, 1), bytes_to_half2(in.w, 0), bytes_to_half2(in.w, 1));
}

/// 16 pixels of C interleaved channels (in[k]: bytes 16k .. 16k + 15) as exact FP16 values in C
/// planes: channel c's 16 values at out + c * plane_stride (32-byte aligned). A pair of pixels'
/// bytes from one word takes one byte permute, from two words two; then the 1024 bias goes.
template <int C>
__device__ __forceinline__ void store_planes_as_halves(unsigned short* out, int plane_stride, const uint4 (&in)[C]) {
  unsigned words[4 * C];
#pragma unroll
  for (int k = 0; k < C; ++k) {
    words[4 * k] = in[k].x;
    words[4 * k + 1] = in[k].y;
    words[4 * k + 2] = in[k].z;
    words[4 * k + 3] = in[k].w;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    unsigned pairs[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int i = C * 2 * q + c;  // byte of pixel 2q, then of pixel 2q + 1
      const int j = i + C;
      if (i / 4 == j / 4) {
        pairs[q] = unbias_half2(__byte_perm(words[i / 4], 0x6464u, (i % 4) | 0x40 | ((j % 4) << 8) | 0x4000));
      } else {
        const unsigned both = __byte_perm(words[i / 4], words[j / 4], (i % 4) | ((4 + j % 4) << 8));
        pairs[q] = unbias_half2(__byte_perm(both, 0x6464u, 0x4240u));
      }
    }
    auto* vectors = reinterpret_cast<uint4*>(out + c * plane_stride);
    vectors[0] = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
    vectors[1] = make_uint4(pairs[4], pairs[5], pairs[6], pairs[7]);
  }
}

}  // namespace cuconv::kernels::tensor_detail
