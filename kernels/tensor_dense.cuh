#pragma once
/// @file tensor_dense.cuh
/// `tensor` for dense filters (any kh x kw up to 17 x 17, any anchor) on 8-bit images: every
/// filter row is an FP16 MMA of 16 image rows against a banded Toeplitz matrix of that row's
/// weights, accumulated over the filter rows on the tensor cores.
///  - Exact integer sums: the host scales the weights by 2^e and rounds them to integers
///    H = 2048 * hi + lo (|hi| <= 2048, |lo| <= 1024, exact in FP16; src/separable.cpp,
///    dense_tensor_split). Sum(x * hi) and sum(x * lo) accumulate in separate MMA chains; the host
///    groups the filter rows so that no chain's partial sum can pass 2^24, and after each group
///    the chains' 2048 * hi + lo is added to an FP32 running sum (`flush_rows`). The only
///    roundings are those few additions and the final scaling.
///  - Channels are staged as planes (interleaved bytes to one FP16 row per channel), so the band of
///    every Toeplitz matrix has stride 1: an n-tile of 8 outputs reads a window of 8 + kw - 1
///    inputs starting at an 8-aligned staged column, one k16 step up to kw = 9 and a k16 plus a
///    k8 step up to 17. The matrix is then the same for every n-tile of a filter row; its
///    fragments are built once per block into shared memory.
/// Block and thread mapping: 4 warps own P output pixels of a row (P = 256 for one channel, 128
/// for three or four) and walk a strip of rows 16 at a time. Per chunk the threads stage 16 new
/// input rows into a 32-row ring (loaded one chunk ahead into registers, 8 pixels of all channels
/// a thread and step); then each warp computes its n-tiles (P * C / 32 of 8 outputs x 16 rows, 4
/// at a time) over all filter rows, rounds them into an output tile in shared memory, and the
/// block stores the tile with 16-byte stores.
#include "common.cuh"
#include "mma.cuh"

#include <cstdint>
#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kDenseMaxSide = 17;  ///< 16 output rows and kh - 1 halo rows fill the 32-row ring
inline constexpr int kDenseWarps = 4;
inline constexpr int kDenseRingRows = 32;

/// Output pixels of a row per block, and halves of one channel plane of a staged row (the tile
/// and up to 16 pixels of halo). Row strides are odd multiples of 16 bytes, so the eight rows an
/// ldmatrix reads fall in distinct banks.
__host__ __device__ constexpr int dense_tile_pixels(int channels) { return channels == 1 ? 256 : 128; }
__host__ __device__ constexpr int dense_plane_stride(int channels) { return dense_tile_pixels(channels) + 16; }
__host__ __device__ constexpr int dense_row_stride(int channels) { return channels * dense_plane_stride(channels) + 8; }
/// Bytes of one row of the output tile: 16 more than the tile, so its rows start in different banks.
__host__ __device__ constexpr int dense_out_stride(int channels) { return dense_tile_pixels(channels) * channels + 16; }

/// Dynamic shared memory of one block: the staging ring, the output tile, the Toeplitz
/// fragments of kh filter rows (6 words a lane) and the column map.
__host__ __device__ constexpr int dense_shared_bytes(int channels, int kh) {
  return kDenseRingRows * dense_row_stride(channels) * 2 + 16 * dense_out_stride(channels) + kh * 32 * 24 +
         dense_plane_stride(channels) * 4;
}

/// The weights as FP16 bits, row-major kh x kw (H = 2048 * hi + lo), and the final scaling.
struct TensorDenseTaps {
  unsigned short hi[kDenseMaxSide * kDenseMaxSide];
  unsigned short lo[kDenseMaxSide * kDenseMaxSide];
  float scale;  ///< 2^-e
  unsigned flush_rows;  ///< bit i: the chains are added to the running sum after filter row i
};

/// Block (bx, by) filters pixels [bx * P, (bx + 1) * P) of rows [s0, s0 + strip_rows),
/// s0 = by * strip_rows, by + gridDim.y, ... (strip_rows a multiple of 16). C interleaved
/// channels, 8-bit in and out; `word_aligned`: rows 4-byte aligned (else every staged byte goes
/// through the column map), `vector_aligned`: output rows 16-byte aligned. KSteps: 1 for
/// kw <= 9, 2 for kw <= 17.
template <int C, int KSteps>
__global__ void __launch_bounds__(32 * kDenseWarps, 4)
    tensor_dense_kernel(PlaneView<const std::uint8_t> src, PlaneView<std::uint8_t> dst, ConvParams p,
                        TensorDenseTaps taps, bool word_aligned, bool vector_aligned, int strip_rows) {
  using namespace tensor_detail;
  constexpr int kThreads = 32 * kDenseWarps;
  constexpr int kP = dense_tile_pixels(C);
  constexpr int kPlane = dense_plane_stride(C);
  constexpr int kRow = dense_row_stride(C);
  constexpr int kOut = dense_out_stride(C);
  constexpr int kUnits = kPlane / 8;                                 // 8-pixel steps of a staged row
  constexpr int kSlots = (16 * kUnits + kThreads - 1) / kThreads;    // steps a thread and chunk
  constexpr int kWords = 2 * C + 1;                                  // words loaded for 8C bytes
  constexpr int kTilesPerPlane = kP / 8;
  constexpr int kGroups = kP * C / 8 / 4 / kDenseWarps;              // 4 n-tiles a group
  static_assert(kTilesPerPlane % 4 == 0, "a group of 4 n-tiles stays in one plane");

  extern __shared__ __align__(16) unsigned char dense_shared[];
  auto* ring = reinterpret_cast<unsigned short*>(dense_shared);
  auto* out_tile = dense_shared + kDenseRingRows * kRow * 2;
  auto* fragments = reinterpret_cast<uint4*>(out_tile + 16 * kOut);    // [kh][32]: hi k16, lo k16
  auto* fragments8 = reinterpret_cast<uint2*>(fragments + p.kh * 32);  // [kh][32]: hi k8, lo k8
  auto* column_source = reinterpret_cast<int*>(fragments8 + p.kh * 32);

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int row_elems = src.width * C;
  const int p0 = static_cast<int>(blockIdx.x) * kP;
  const int first_pixel = p0 - p.anchor_x;  // pixel of staged column 0

  // Where staged column j reads: pixel first_pixel + j through the border rule (-1: the constant).
  for (int j = tid; j < kPlane; j += kThreads) column_source[j] = interpolate_border(first_pixel + j, src.width, p.border);
  // Toeplitz fragments of filter row i: B[k][n] = w[i][k - n] for 0 <= k - n < kw.
  for (int idx = tid; idx < p.kh * 32; idx += kThreads) {
    const int i = idx >> 5;
    const int g = (idx & 31) >> 2;
    const int t = idx & 3;
    const auto entry = [&](const unsigned short* w, int k) {
      const int j = k - g;
      return (j >= 0 && j < p.kw) ? static_cast<unsigned>(w[i * p.kw + j]) : 0u;
    };
    const auto pair = [&](const unsigned short* w, int k) { return entry(w, k) | (entry(w, k + 1) << 16); };
    fragments[idx] = make_uint4(pair(taps.hi, 2 * t), pair(taps.hi, 2 * t + 8), pair(taps.lo, 2 * t),
                                pair(taps.lo, 2 * t + 8));
    fragments8[idx] = make_uint2(pair(taps.hi, 16 + 2 * t), pair(taps.lo, 16 + 2 * t));
  }
  const unsigned border_bytes = static_cast<unsigned>(p.border_value) * 0x01010101u;
  __syncthreads();

  // Staging: step s of this thread is staged row r, pixels 8u .. 8u + 7 of every plane. Inside the
  // row it loads the 2C + 1 aligned words around the 8C bytes and records the byte offset; at the
  // row's ends and in rows of a constant border it assembles the bytes themselves (offset 0).
  unsigned pending[kSlots][kWords];
  int pending_shift[kSlots];
  // body(s, r, u) for every step s of this thread (staged row r, unit u).
  const auto for_each_step = [&](auto&& body) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int idx = tid + s * kThreads;
      if (idx >= 16 * kUnits) break;
      const int r = idx / kUnits;
      body(s, r, idx - r * kUnits);
    }
  };
  const auto load_chunk = [&](int first_row) {
    for_each_step([&](int s, int r, int u) {
      const int y = interpolate_border(first_row + r, src.height, p.border);
      const int e = (first_pixel + 8 * u) * C;
      pending_shift[s] = 0;
      if (y < 0) {
#pragma unroll
        for (int k = 0; k < kWords; ++k) pending[s][k] = border_bytes;
      } else if (word_aligned && e >= 0 && ((e >> 2) + kWords) * 4 <= row_elems) {
        const auto* words = reinterpret_cast<const unsigned*>(src.row(y)) + (e >> 2);
#pragma unroll
        for (int k = 0; k < kWords; ++k) pending[s][k] = __ldg(words + k);
        pending_shift[s] = 8 * (e & 3);
      } else {
        const std::uint8_t* row = src.row(y);
#pragma unroll
        for (int k = 0; k < kWords; ++k) pending[s][k] = 0u;
#pragma unroll
        for (int b = 0; b < 8 * C; ++b) {
          const int from = column_source[8 * u + b / C];
          const unsigned byte = from >= 0 ? static_cast<unsigned>(__ldg(row + from * C + b % C)) : (border_bytes & 0xFFu);
          pending[s][b / 4] |= byte << (8 * (b % 4));
        }
      }
    });
  };
  // The registers as FP16 planes into ring rows 16 * half .. + 15.
  const auto store_chunk = [&](int half) {
    for_each_step([&](int s, int r, int u) {
      unsigned v[2 * C];
#pragma unroll
      for (int k = 0; k < 2 * C; ++k) v[k] = __funnelshift_r(pending[s][k], pending[s][k + 1], pending_shift[s]);
      // Bytes a and b of v as an exact FP16 pair.
      const auto half2_of = [&](int a, int b) {
        const unsigned wa = v[a / 4];
        const unsigned wb = v[b / 4];
        const unsigned pairs = a / 4 == b / 4 ? wa : __byte_perm(wa, wb, static_cast<unsigned>((a % 4) | ((4 + b % 4) << 4)));
        const unsigned sel = a / 4 == b / 4 ? static_cast<unsigned>((a % 4) | 0x40 | ((b % 4) << 8) | 0x4000)
                                            : 0x4140u;
        return unbias_half2(__byte_perm(pairs, 0x6464u, sel));
      };
      unsigned short* row = ring + (16 * half + r) * kRow + 8 * u;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        *reinterpret_cast<uint4*>(row + c * kPlane) =
            make_uint4(half2_of(c, C + c), half2_of(2 * C + c, 3 * C + c), half2_of(4 * C + c, 5 * C + c),
                       half2_of(6 * C + c, 7 * C + c));
      }
    });
  };

  for (int s0 = static_cast<int>(blockIdx.y) * strip_rows; s0 < src.height;
       s0 += static_cast<int>(gridDim.y) * strip_rows) {
    const int out_chunks = (min(strip_rows, src.height - s0) + 15) / 16;
    const int first_row = s0 - p.anchor_y;  // input row of staged chunk 0, row 0
    load_chunk(first_row);
    store_chunk(0);
    load_chunk(first_row + 16);
    for (int m = 0; m < out_chunks; ++m) {
      // 1. Staged chunk m + 1 into the ring, chunk m + 2's loads under way.
      store_chunk((m + 1) & 1);
      if (m + 2 <= out_chunks) load_chunk(first_row + 16 * (m + 2));
      __syncthreads();  // chunks m and m + 1 staged; the previous output tile is stored

      // 2. Output chunk m: n-tiles of this warp, 4 at a time, over every filter row.
#pragma unroll 1
      for (int group = 0; group < kGroups; ++group) {
        const int tile = (warp * kGroups + group) * 4;
        const int plane = tile / kTilesPerPlane;
        const int b0 = tile - plane * kTilesPerPlane;
        // This lane's ldmatrix row: tile row lane % 16, column block b0 + lane / 16 (+ j).
        const unsigned short* a_column = ring + plane * kPlane + 8 * (b0 + (lane >> 4));
        float run[4][4] = {};
        float hi[4][4];
        float lo[4][4];
        // Filter row i into the chains; `first` (a row after a flush) starts them from zero.
        const auto mma_row = [&](int i, auto first) {
          constexpr bool kFirst = decltype(first)::value;
          const unsigned short* a_row = a_column + ((16 * m + i + (lane & 15)) & (kDenseRingRows - 1)) * kRow;
          // a[j]: column blocks b0 + j and b0 + j + 1 (k16 of n-tile j; its first half is k8 of
          // n-tile j - 2, its second half k8 of n-tile 3 for j = 4).
          constexpr int kLoads = KSteps == 2 ? 5 : 4;
          unsigned a[kLoads][4];
#pragma unroll
          for (int j = 0; j < kLoads; ++j) ldmatrix_x4(a[j], a_row + 8 * j);
          const uint4 b = fragments[i * 32 + lane];
          const unsigned b_hi[2] = {b.x, b.y};
          const unsigned b_lo[2] = {b.z, b.w};
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            if constexpr (kFirst) {
              mma_f16_f32_first(hi[n], a[n], b_hi);
              mma_f16_f32_first(lo[n], a[n], b_lo);
            } else {
              mma_f16_f32(hi[n], a[n], b_hi);
              mma_f16_f32(lo[n], a[n], b_lo);
            }
          }
          if constexpr (KSteps == 2) {
            const uint2 b8 = fragments8[i * 32 + lane];
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              // Column block b0 + n + 2.
              const unsigned a0 = n < 3 ? a[n + 2][0] : a[4][2];
              const unsigned a1 = n < 3 ? a[n + 2][1] : a[4][3];
              mma_f16_f32_k8(hi[n], a0, a1, b8.x);
              mma_f16_f32_k8(lo[n], a0, a1, b8.y);
            }
          }
        };
        // Row groups: the first row starts the chains, the group's last adds them to the running sum.
#pragma unroll 1
        for (int i = 0; i < p.kh;) {
          const int last = i + __ffs(static_cast<int>(taps.flush_rows >> i)) - 1;  // the group's last row
          mma_row(i, std::true_type{});
#pragma unroll 1
          for (int r = i + 1; r <= last; ++r) mma_row(r, std::false_type{});
#pragma unroll
          for (int n = 0; n < 4; ++n)
#pragma unroll
            for (int k = 0; k < 4; ++k) run[n][k] += fmaf(hi[n][k], 2048.0f, lo[n][k]);
          i = last + 1;
        }
        // Round into the output tile: C holds rows g and g + 8, pixels 2t and 2t + 1 of each n-tile.
        // run * 2^-e is exact (a power of two), so exact sums keep their ties; clamped, then rounded
        // half to even into the low byte of 1.5 * 2^23 + x.
        const int g = lane >> 2;
        const int t = lane & 3;
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const float v = fminf(fmaxf(fmaf(run[n][k], taps.scale, p.delta), 0.0f), 255.0f);
            const int pixel = 8 * (b0 + n) + 2 * t + (k & 1);
            out_tile[(g + 8 * (k >> 1)) * kOut + pixel * C + plane] =
                static_cast<unsigned char>(__float_as_uint(__fadd_rn(v, 12582912.0f)));
          }
      }
      __syncthreads();  // output tile complete; the ring's chunk m is free again

      // 3. The output tile to global memory, 16 bytes a thread and step.
      constexpr int kVectorsPerRow = kP * C / 16;
      const int rows_left = min(16, min(src.height, s0 + strip_rows) - (s0 + 16 * m));
      for (int idx = tid; idx < 16 * kVectorsPerRow; idx += kThreads) {
        const int r = idx / kVectorsPerRow;
        const int e = p0 * C + 16 * (idx - r * kVectorsPerRow);
        if (r >= rows_left || e >= row_elems) continue;
        const unsigned char* from = out_tile + r * kOut + (e - p0 * C);
        std::uint8_t* to = dst.row(s0 + 16 * m + r) + e;
        if (vector_aligned && e + 16 <= row_elems) {
          __stcs(reinterpret_cast<uint4*>(to), *reinterpret_cast<const uint4*>(from));
        } else {
          for (int k = 0; k < 16 && e + k < row_elems; ++k) to[k] = from[k];
        }
      }
    }
  }
}

}  // namespace cuconv::kernels
