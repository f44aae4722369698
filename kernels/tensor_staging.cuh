#pragma once
/// @file tensor_staging.cuh
/// Staging pieces the separable `tensor` kernels share: where each staged column reads at a row's
/// ends (the border rule, found once a block), 16 bytes gathered through that map, and 16 bytes
/// stored as exact FP16 values.
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
  vectors[0] = make_uint4(bytes_to_half2(in.x, 0), bytes_to_half2(in.x, 1), bytes_to_half2(in.y, 0), bytes_to_half2(in.y, 1));
  vectors[1] = make_uint4(bytes_to_half2(in.z, 0), bytes_to_half2(in.z, 1), bytes_to_half2(in.w, 0), bytes_to_half2(in.w, 1));
}

}  // namespace cuconv::kernels::tensor_detail
