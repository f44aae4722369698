// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_dense.cuh
/// `tensor` for dense filters (any kh x kw up to 17 x 17, any anchor) on 8-bit images with byte
/// MMAs: the pixels stay bytes, the weights are integers H = w * 2^e written as three signed
/// base-256 digits (src/filter/dense_splits.cpp, dense_tensor_split), and each digit's sum over the whole
/// filter accumulates exactly in 32-bit integers on the tensor cores (m16n8k32, u8 x s8 -> s32).
///  - Exactness: |digit| <= 128, so a chain stays below 255 * 128 * 289 < 2^24 and converts to
///    float exactly; the epilogue joins the three chains with two float FMAs and scales by the
///    exact 2^-e, so sums below 2^24 (dyadic filters) keep their ties.
///  - K is a list of 8-byte chunks: filter row i of an n-tile of 8 outputs reads Chunks =
///    ceil((kw + 7) / 8) chunks of its staged row from an 8-aligned start; the kh * Chunks chunks
///    are laid end to end and cut into MMAs of 4, so filter rows share MMAs and only the last one
///    carries padding. Lane (g, t) supplies chunk 4q + t of MMA q; the Toeplitz fragments follow
///    the same chunk order and are built once per block into shared memory.
/// Block and thread mapping: 4 warps own P output pixels of a row (P = 256 for one channel, 128
/// for three or four) and walk a strip of rows 16 at a time. Per chunk of 16 rows the threads
/// stage the next 16 input rows as byte planes into a 32-row ring (loaded one chunk ahead into
/// registers, 8 pixels of all channels a thread and step); each warp computes its n-tiles (8
/// outputs x 16 rows, 4 at a time) over all MMAs, rounds them into an output tile in shared
/// memory, and the block stores the tile with 16-byte stores.
#include "common.cuh"
#include "mma.cuh"

#include <cstdint>
#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kDenseMaxSide = 17;  ///< 16 output rows and kh - 1 halo rows fill the 32-row ring
inline constexpr int kDenseWarps = 4;
inline constexpr int kDenseRingRows = 32;

/// Output pixels of a row per block (the staged planes hold 16 pixels more, the halo).
__host__ __device__ constexpr int dense_tile_pixels(int channels) { return channels == 1 ? 256 : 128; }
/// Bytes of one row of the output tile: 16 more than the tile, so its rows start in different banks.
__host__ __device__ constexpr int dense_out_stride(int channels) { return dense_tile_pixels(channels) * channels + 16; }

/// Bytes of one channel plane of a staged row (the tile and up to 16 pixels of halo). Ring slot s
/// holds rows s and s + 8 word by word (word w of row s at 8w, of row s + 8 at 8w + 4), so one
/// 16-byte load gives an MMA's A fragment of tile rows g and g + 8. A slot is a multiple of 128
/// bytes plus 16 * Chunks, so the 8 lanes of a load phase (rows g, g + 1 of consecutive chunks)
/// fall in distinct banks.
__host__ __device__ constexpr int dense_plane_bytes(int channels) { return dense_tile_pixels(channels) + 16; }
__host__ __device__ constexpr int dense_slot_bytes(int channels, int chunks) {
  return (2 * channels * dense_plane_bytes(channels) + 127 - 16 * chunks) / 128 * 128 + 16 * chunks;
}
__host__ __device__ constexpr int dense_mmas(int kh, int chunks) { return (kh * chunks + 3) / 4; }

/// Dynamic shared memory of one block: the ring, the output tile, the fragments (6 words a lane
/// and MMA) and the column map.
__host__ __device__ constexpr int dense_shared_bytes(int channels, int chunks, int kh) {
  return kDenseRingRows * dense_slot_bytes(channels, chunks) + 16 * dense_out_stride(channels) +
         dense_mmas(kh, chunks) * 32 * 24 + dense_plane_bytes(channels) * 4;
}

/// The weights H = d0 + 256 * d1 + 65536 * d2, row-major kh x kw, and the final scaling.
struct alignas(4) TensorDenseTaps {
  signed char digit[3][kDenseMaxSide * kDenseMaxSide];
  float scale;  ///< 2^-e
};

/// Three digit chains of weights 65536, 256 and 1 joined by two float FMAs (exact while the sum
/// stays below 2^24).
__device__ __forceinline__ float join_chains(int high, int middle, int low) {
  return fmaf(__int2float_rn(high), 65536.0f, fmaf(__int2float_rn(middle), 256.0f, __int2float_rn(low)));
}

/// The chunk of K position c: filter row `row` and its chunk `chunk` (window bytes 8 chunk ..).
/// Row-major K lists each filter row's chunks in turn; column-major K lists chunk 0 of every
/// row, then chunk 1, ... (the float kernel's layout for 5 chunks a row, whose row-major groups
/// of 4 put two lanes of a load phase on one bank).
struct DenseChunk {
  int row;
  int chunk;
  /// The chunk 4 K positions later in column-major K.
  __device__ __forceinline__ void advance_column_major(int kh) {
    row += 4;
    while (row >= kh) {
      row -= kh;
      ++chunk;
    }
  }
  __device__ __forceinline__ static DenseChunk at(int c, bool column_major, int chunks, int kh) {
    return column_major ? DenseChunk{c % kh, c / kh} : DenseChunk{c / chunks, c % chunks};
  }
};

/// The Toeplitz B fragments of `mmas` MMAs into shared memory, by the whole block. `digits`: three
/// planes of `plane_stride` signed bytes, filter row-major kh x kw. MMA q, lane (g', t'): K rows
/// 4t' .. 4t' + 3 are bytes 0..3 of chunk 4q + t' (DenseChunk::at), rows 16 + 4t' .. its bytes
/// 4..7; column g' is output g' of the n-tile, so byte b of the window holds w[i][b - g'].
/// `fragments` gets digits 0 and 1, `fragments2` digit 2 (uint2) or digits 2 and 3 (uint4).
template <int Chunks, class Second>
__device__ void build_dense_fragments(uint4* fragments, Second* fragments2, const unsigned char* digits,
                                      int plane_stride, int kw, int kh, int mmas, bool column_major = false) {
  const int threads = static_cast<int>(blockDim.x);
  for (int idx = static_cast<int>(threadIdx.x); idx < mmas * 32; idx += threads) {
    const int q = idx >> 5;
    const int gl = (idx & 31) >> 2;
    const DenseChunk c = DenseChunk::at(4 * q + (idx & 3), column_major, Chunks, kh);
    const int i = c.row;
    const int window = 8 * c.chunk;
    const auto word = [&](int d, int first_byte) {
      unsigned w = 0;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int x = window + first_byte + u - gl;
        const unsigned v = (i < kh && x >= 0 && x < kw) ? digits[d * plane_stride + i * kw + x] : 0u;
        w |= v << (8 * u);
      }
      return w;
    };
    fragments[idx] = make_uint4(word(0, 0), word(0, 4), word(1, 0), word(1, 4));
    if constexpr (std::is_same_v<Second, uint4>) {
      fragments2[idx] = make_uint4(word(2, 0), word(2, 4), word(3, 0), word(3, 4));
    } else {
      fragments2[idx] = make_uint2(word(2, 0), word(2, 4));
    }
  }
}

/// Block (bx, by) filters pixels [bx * P, (bx + 1) * P) of rows [s0, s0 + strip_rows),
/// s0 = by * strip_rows, by + gridDim.y, ... (strip_rows a multiple of 16). C interleaved
/// channels, 8-bit in and out; `word_aligned`: rows 4-byte aligned (else every staged byte goes
/// through the column map), `vector_aligned`: output rows 16-byte aligned. Chunks: 2 for
/// kw <= 9, 3 for kw <= 17.
/// The dense kernels' staging steps: calls body(s, r, u) for each step s of thread `tid` of
/// kThreads, which stages row r (of 16) at unit u (of kUnits, 8 pixels each); the last step stops
/// where the 16 x kUnits units end. Shared by tensor_dense_kernel and tensor_dense_planes_kernel.
template <int kThreads, int kUnits, class Body>
__device__ __forceinline__ void for_each_staging_step(int tid, Body&& body) {
  constexpr int kSteps = (16 * kUnits + kThreads - 1) / kThreads;
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int idx = tid + s * kThreads;
    if (idx >= 16 * kUnits) break;
    const int r = idx / kUnits;
    body(s, r, idx - r * kUnits);
  }
}

template <int C, int Chunks>
__global__ void __launch_bounds__(32 * kDenseWarps, 4)
    tensor_dense_kernel(PlaneView<const std::uint8_t> src, PlaneView<std::uint8_t> dst, ConvParams p,
                        TensorDenseTaps taps, bool word_aligned, bool vector_aligned, int strip_rows) {
  using namespace tensor_detail;
  constexpr int kThreads = 32 * kDenseWarps;
  constexpr int kP = dense_tile_pixels(C);
  constexpr int kPlane = dense_plane_bytes(C);
  constexpr int kSlot = dense_slot_bytes(C, Chunks);
  constexpr int kOut = dense_out_stride(C);
  constexpr int kUnits = kPlane / 8;                               // 8-pixel steps of a staged row
  constexpr int kSteps = (16 * kUnits + kThreads - 1) / kThreads;  // steps a thread and chunk
  constexpr int kWords = 2 * C + 1;                                // words loaded for 8C bytes
  constexpr int kTilesPerPlane = kP / 8;
  constexpr int kGroups = kP * C / 8 / 4 / kDenseWarps;  // 4 n-tiles a group
  static_assert(kTilesPerPlane % 4 == 0, "a group of 4 n-tiles stays in one plane");

  extern __shared__ __align__(16) unsigned char dense_shared[];
  unsigned char* ring = dense_shared;
  auto* out_tile = ring + kDenseRingRows * kSlot;
  auto* fragments = reinterpret_cast<uint4*>(out_tile + 16 * kOut);  // [mmas][32]: d0 b0 b1, d1 b0 b1
  const int mmas = dense_mmas(p.kh, Chunks);
  auto* fragments2 = reinterpret_cast<uint2*>(fragments + mmas * 32);  // [mmas][32]: d2 b0 b1
  auto* column_source = reinterpret_cast<int*>(fragments2 + mmas * 32);

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int row_elems = src.width * C;
  const int p0 = static_cast<int>(blockIdx.x) * kP;
  const int first_pixel = p0 - p.anchor_x;  // pixel of staged column 0

  for (int j = tid; j < kPlane; j += kThreads)
    column_source[j] = interpolate_border(first_pixel + j, src.width, p.border);
  // The digits into shared memory (the output tile's space, unused until the first epilogue) a word
  // a thread: the fragments below index them per lane, which from kernel parameters would serialize.
  constexpr int kDigitWords = (3 * kDenseMaxSide * kDenseMaxSide + 3) / 4;
  auto* digit_words = reinterpret_cast<unsigned*>(out_tile);
  for (int k = tid; k < kDigitWords; k += kThreads) digit_words[k] = reinterpret_cast<const unsigned*>(taps.digit)[k];
  __syncthreads();
  build_dense_fragments<Chunks>(fragments, fragments2, out_tile, kDenseMaxSide * kDenseMaxSide, p.kw, p.kh, mmas);
  const unsigned border_bytes = static_cast<unsigned>(p.border_value) * 0x01010101u;
  __syncthreads();  // fragments and column map ready; the output tile's space is free again

  // Staging: step s of this thread is staged row r, pixels 8u .. 8u + 7 of every plane. Inside the
  // row it loads the 2C + 1 aligned words around the 8C bytes and records the byte offset; at the
  // row's ends and in rows of a constant border it assembles the bytes themselves (offset 0).
  unsigned pending[kSteps][kWords];
  int pending_shift[kSteps];
  const auto for_each_step = [&](auto&& body) { for_each_staging_step<kThreads, kUnits>(tid, body); };
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
          const unsigned byte =
              from >= 0 ? static_cast<unsigned>(__ldg(row + from * C + b % C)) : (border_bytes & 0xFFu);
          pending[s][b / 4] |= byte << (8 * (b % 4));
        }
      }
    });
  };
  const auto store_chunk = [&](int half) {
    for_each_step([&](int s, int r, int u) {
      unsigned v[2 * C];
#pragma unroll
      for (int k = 0; k < 2 * C; ++k) v[k] = __funnelshift_r(pending[s][k], pending[s][k + 1], pending_shift[s]);
      // Staged row R into slot R (low words) and slot R - 8 (high words).
      const int staged = 16 * half + r;
      unsigned char* low = ring + staged * kSlot + 16 * u;
      unsigned char* high = ring + ((staged - 8) & (kDenseRingRows - 1)) * kSlot + 16 * u + 4;
      const auto put = [&](int c, unsigned w0, unsigned w1) {
        *reinterpret_cast<unsigned*>(low + 2 * c * kPlane) = w0;
        *reinterpret_cast<unsigned*>(low + 2 * c * kPlane + 8) = w1;
        *reinterpret_cast<unsigned*>(high + 2 * c * kPlane) = w0;
        *reinterpret_cast<unsigned*>(high + 2 * c * kPlane + 8) = w1;
      };
      if constexpr (C == 1) {
        put(0, v[0], v[1]);
      } else {
        // Bytes c, c + C, c + 2C, c + 3C from byte `first` of v.
        const auto gather = [&](int c, int first) {
          unsigned w = 0;
#pragma unroll
          for (int u2 = 0; u2 < 4; ++u2) {
            const int b = first + c + C * u2;
            w |= ((v[b / 4] >> (8 * (b % 4))) & 0xFFu) << (8 * u2);
          }
          return w;
        };
#pragma unroll
        for (int c = 0; c < C; ++c) put(c, gather(c, 0), gather(c, 4 * C));
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

      // 2. Output chunk m: n-tiles of this warp, 4 at a time, over every MMA.

#pragma unroll 1
      for (int group = 0; group < kGroups; ++group) {
        const int tile = (warp * kGroups + group) * 4;
        const int plane = tile / kTilesPerPlane;
        const int b0 = tile - plane * kTilesPerPlane;
        const unsigned char* window = ring + 2 * plane * kPlane + 16 * b0;
        int acc[3][4][4];
        // MMA q: this lane's chunk 4q + t, tile rows g and g + 8 from one slot.
        const auto mma_step = [&](int q, auto first) {
          constexpr bool kFirst = decltype(first)::value;
          const int c = 4 * q + t;
          const int i = c / Chunks;
          const unsigned char* slot =
              window + 16 * (c - i * Chunks) + ((16 * m + i + g) & (kDenseRingRows - 1)) * kSlot;
          unsigned a[4][4];
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            const uint4 x = *reinterpret_cast<const uint4*>(slot + 16 * n);
            a[n][0] = x.x;
            a[n][1] = x.y;
            a[n][2] = x.z;
            a[n][3] = x.w;
          }
          const uint4 b = fragments[q * 32 + lane];
          const uint2 b2 = fragments2[q * 32 + lane];
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            mma_i8<kFirst>(acc[0][n], a[n], b.x, b.y);
            mma_i8<kFirst>(acc[1][n], a[n], b.z, b.w);
            mma_i8<kFirst>(acc[2][n], a[n], b2.x, b2.y);
          }
        };
        mma_step(0, std::true_type{});
#pragma unroll 1
        for (int q = 1; q < mmas; ++q) mma_step(q, std::false_type{});

          // Round into the output tile: C holds rows g and g + 8, pixels 2t and 2t + 1 of each n-tile.
          // The chains convert exactly; sum * 2^-e is exact, so exact sums keep their ties; then
          // rounded half to even and saturated to a byte.
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int k = 0; k < 4; k += 2) {
            unsigned v[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const float sum = join_chains(acc[2][n][k + h], acc[1][n][k + h], acc[0][n][k + h]);
              v[h] = round_to_byte(fmaf(sum, taps.scale, p.delta));
            }
            const int pixel = 8 * (b0 + n) + 2 * t;
            unsigned char* to = out_tile + (g + 8 * (k >> 1)) * kOut + pixel * C + plane;
            if constexpr (C == 1) {
              *reinterpret_cast<unsigned short*>(to) = static_cast<unsigned short>(v[0] | (v[1] << 8));
            } else {
              to[0] = static_cast<unsigned char>(v[0]);
              to[C] = static_cast<unsigned char>(v[1]);
            }
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
