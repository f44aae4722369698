// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_dense_planes.cuh
/// `tensor` for dense filters up to 31 x 31 on float and 16-bit pixels, and on 8-bit pixels past
/// kernels/tensor_dense.cuh's 17 x 17, on byte MMAs: every pixel is staged as base-256 digit
/// planes and every weight as an integer
/// H = w 2^e in signed base-256 digits (src/filter/dense_splits.cpp); m16n8k32 MMAs sum each product of a
/// pixel digit plane and a weight digit over the whole filter in exact 32-bit chains, grouped by
/// weight, and the epilogue joins the chains. What each pixel type stages and keeps:
///  - float: block floating point. Each block scales its window by 2^s chosen from the window's
///    largest magnitude M (M 2^s in (2^21, 2^22]) and writes three signed digits of the integer
///    nearest x 2^s; weights have three digits (dense_tensor_split_float). The six products of
///    weight 2^16 and more go into three chains (2^32, 2^24, 2^16), joined by two float FMAs and
///    scaled by 2^(16 - s - e). The dropped low products and the roundings are bounded relative to
///    sum|w| * M, admitted only well inside the 32F pass rule. A window holding a NaN or an
///    infinity, or whose scales pass 2^+-252, is summed directly in FP32 by its block.
///  - 16-bit: the pixel's own two bytes are its unsigned digits (no scaling); weights have four
///    digits (|H| <= 2^30, dense_tensor_split_u16). All eight products go into five chains (2^32,
///    2^24, 2^16, 2^8, 1), joined in double, scaled by 2^-e and rounded half to even: the exact
///    sum of the rounded weights (while it stays below 2^53), bounded and admitted under the
///    integer pass rule.
///  - 8-bit: the pixel is its one unsigned plane; weights have three digits (dense_tensor_split,
///    as the 8-bit kernel's); three chains (2^16, 2^8, 1), each below 255 * 128 * 961 < 2^31,
///    joined in double as the 16-bit ones: again the exact sum of the rounded weights.
/// Block and thread mapping: 4 warps own P = 128 output pixels of a row of one channel (channels
/// interleave in blockIdx.x, so neighbouring blocks read the same pixels) and walk a strip of rows
/// 16 at a time; the ring holds the digit planes of the next chunks of 16 input rows (32 rows for
/// kh <= 17, 64 beyond), staged as kernels/tensor_dense.cuh stages bytes; each warp computes 4
/// n-tiles (8 outputs x 16 rows) over all MMAs and the block stores the output tile.
#include "tensor_dense.cuh"

#include <cstdint>
#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kDensePlanesMaxSide = 31;
inline constexpr int kDensePlanesPixels = 128;  ///< output pixels of a row per block
inline constexpr int kDensePlanesWarps = 4;

/// How a pixel type is staged and summed: digit planes a pixel, digits a weight, chains kept
/// (products of pixel digit i and weight digit j go to chain (planes - 1) + (digits - 1) - i - j
/// while it is below `chains`; chain 0 has the largest weight), and whether the digits are signed.
template <class Pixel>
struct DensePlanes;
template <>
struct DensePlanes<float> {
  static constexpr int planes = 3;
  static constexpr int weight_digits = 3;
  static constexpr int chains = 3;
  static constexpr bool signed_digits = true;
};
template <>
struct DensePlanes<std::uint16_t> {
  static constexpr int planes = 2;
  static constexpr int weight_digits = 4;
  static constexpr int chains = 5;
  static constexpr bool signed_digits = false;
};
template <>
struct DensePlanes<std::uint8_t> {
  static constexpr int planes = 1;
  static constexpr int weight_digits = 3;
  static constexpr int chains = 3;
  static constexpr bool signed_digits = false;
};

/// 8-byte chunks a filter row reads for an n-tile of 8 outputs: ceil((kw + 7) / 8).
__host__ __device__ constexpr int dense_planes_chunks(int kw) { return (kw + 14) / 8; }
/// Ring rows: the chunk computed and the next ones up to its last halo row, a power of two.
__host__ __device__ constexpr int dense_planes_ring_rows(int kh) { return kh <= 17 ? 32 : 64; }
/// Staged pixels of a row: the tile and what the last n-tile's chunks reach past it.
__host__ __device__ constexpr int dense_planes_plane(int chunks) { return kDensePlanesPixels + 8 * (chunks - 1); }
/// K order: column-major for 5 chunks a row (DenseChunk), row-major otherwise.
__host__ __device__ constexpr bool dense_planes_column_major(int chunks) { return chunks == 5; }
/// Bytes of a ring slot (the digit planes of two rows): the residue modulo 128 that puts the 8
/// lanes of each phase of an A-fragment load on distinct banks for this K order and filter height
/// (16 * chunks row-major, as in the 8-bit kernel; by kh % 8 column-major).
__host__ __device__ constexpr int dense_planes_slot(int planes, int chunks, int kh) {
  constexpr int kColumnResidue[8] = {16, 64, 32, 32, 16, 112, 16, 16};
  const int residue = dense_planes_column_major(chunks) ? kColumnResidue[kh % 8] : 16 * chunks;
  return (2 * planes * dense_planes_plane(chunks) + 127 - residue) / 128 * 128 + residue;
}
/// Bytes of a row of the output tile, 16 more than the tile so rows start in different banks.
__host__ __device__ constexpr int dense_planes_out_stride(int pixel_bytes) {
  return kDensePlanesPixels * pixel_bytes + 16;
}
/// Bytes of the B fragments of one MMA and lane: two words a weight digit.
__host__ __device__ constexpr int dense_planes_fragment_bytes(int weight_digits) { return 8 * weight_digits; }
template <class Pixel>
__host__ __device__ constexpr int dense_planes_shared_bytes(int chunks, int ring_rows, int kh) {
  using Planes = DensePlanes<Pixel>;
  return ring_rows * dense_planes_slot(Planes::planes, chunks, kh) +
         16 * dense_planes_out_stride(static_cast<int>(sizeof(Pixel))) +
         dense_mmas(kh, chunks) * 32 * dense_planes_fragment_bytes(Planes::weight_digits) +
         dense_planes_plane(chunks) * 4 + 16;
}

/// The weights H = d0 + 256 d1 + 65536 d2 (+ 2^24 d3) (row-major kh x kw) and their exponent:
/// w ~ H 2^-e.
template <int Digits>
struct alignas(4) TensorDensePlanesTaps {
  signed char digit[Digits][kDensePlanesMaxSide * kDensePlanesMaxSide];
  int exponent;
};

/// Block (bx, by): channel bx % channels, pixels [P (bx / channels), + P) of the rows of strips
/// by, by + gridDim.y, ... of `strip_rows` rows (a multiple of 16). `weights`: the float filter
/// (kh x kw) for windows summed directly (float images); `vector_aligned`: one channel with
/// 16-byte aligned output rows.
template <class Pixel, int Chunks, int RingRows>
__global__ void __launch_bounds__(32 * kDensePlanesWarps, 2)
    tensor_dense_planes_kernel(PlaneView<const Pixel> src, PlaneView<Pixel> dst, int channels, ConvParams p,
                               TensorDensePlanesTaps<DensePlanes<Pixel>::weight_digits> taps, const float* weights,
                               bool vector_aligned, int strip_rows) {
  using namespace tensor_detail;
  using Planes = DensePlanes<Pixel>;
  constexpr bool kFloat = std::is_same_v<Pixel, float>;
  static_assert(kFloat || std::is_same_v<Pixel, std::uint16_t> || std::is_same_v<Pixel, std::uint8_t>,
                "float, 16-bit or 8-bit pixels");
  constexpr unsigned kLargest = std::is_same_v<Pixel, std::uint8_t> ? 255u : 65535u;  // integer saturation
  constexpr int kPlanes = Planes::planes;
  constexpr int kDigits = Planes::weight_digits;
  constexpr int kChains = Planes::chains;
  constexpr int kTop = (kPlanes - 1) + (kDigits - 1);  // digit exponent (in bytes) of chain 0
  constexpr int kThreads = 32 * kDensePlanesWarps;
  constexpr int kP = kDensePlanesPixels;
  constexpr int kPlane = dense_planes_plane(Chunks);
  constexpr bool kColumnMajor = dense_planes_column_major(Chunks);
  // Row-major K: one slot size for every height (a constant); column-major: by kh % 8.
  constexpr int kRowMajorSlot = dense_planes_slot(kPlanes, Chunks, 0);
  const int slot_bytes = kColumnMajor ? dense_planes_slot(kPlanes, Chunks, p.kh) : kRowMajorSlot;
  constexpr int kOut = dense_planes_out_stride(static_cast<int>(sizeof(Pixel)));
  constexpr int kUnits = kPlane / 8;                               // 8-pixel steps of a staged row
  constexpr int kSteps = (16 * kUnits + kThreads - 1) / kThreads;  // steps a thread and chunk
  static_assert(RingRows == 32 || RingRows == 64, "the two rings of dense_planes_ring_rows");
  constexpr int kAhead = RingRows == 32 ? 1 : 2;  // chunks staged past the one computed
  static_assert(kP / 8 == 4 * kDensePlanesWarps, "a warp computes 4 n-tiles");
  using Second = std::conditional_t<kDigits == 4, uint4, uint2>;  // B words of digits 2 (and 3)

  extern __shared__ __align__(16) unsigned char dense_shared[];
  unsigned char* ring = dense_shared;
  auto* out_tile = ring + RingRows * slot_bytes;
  auto* fragments = reinterpret_cast<uint4*>(out_tile + 16 * kOut);
  const int mmas = dense_mmas(p.kh, Chunks);
  auto* fragments2 = reinterpret_cast<Second*>(fragments + mmas * 32);
  auto* column_source = reinterpret_cast<int*>(fragments2 + mmas * 32);
  auto* warp_max = reinterpret_cast<unsigned*>(column_source + kPlane);

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int channel = static_cast<int>(blockIdx.x) % channels;
  const int p0 = static_cast<int>(blockIdx.x) / channels * kP;
  const int first_pixel = p0 - p.anchor_x;  // pixel of staged column 0
  const int tile_pixels = min(kP, src.width - p0);

  for (int j = tid; j < kPlane; j += kThreads)
    column_source[j] = interpolate_border(first_pixel + j, src.width, p.border);
  // The digits pass through the ring (unused until the first staged chunk) on their way into the fragments.
  constexpr int kDigitWords = (kDigits * kDensePlanesMaxSide * kDensePlanesMaxSide + 3) / 4;
  static_assert(4 * kDigitWords <= RingRows * kRowMajorSlot, "the digits fit the ring");
  for (int k = tid; k < kDigitWords; k += kThreads)
    reinterpret_cast<unsigned*>(ring)[k] = reinterpret_cast<const unsigned*>(taps.digit)[k];
  __syncthreads();
  build_dense_fragments<Chunks>(fragments, fragments2, ring, kDensePlanesMaxSide * kDensePlanesMaxSide, p.kw, p.kh,
                                mmas, kColumnMajor);
  __syncthreads();

  const auto element = [&](int y, int column) -> Pixel {  // mapped row and column; -1: the border value
    return y < 0 || column < 0 ? static_cast<Pixel>(p.border_value) : __ldg(src.row(y) + (column * channels + channel));
  };

  // Staging: step s of this thread is staged row r, pixels 8u .. 8u + 7, loaded one chunk ahead
  // and written as digits (float: once the block's scale is known).
  Pixel pending[kSteps][8];
  const auto for_each_step = [&](auto&& body) { for_each_staging_step<kThreads, kUnits>(tid, body); };
  const auto load_chunk = [&](int first_row) {
    for_each_step([&](int s, int r, int u) {
      const int y = interpolate_border(first_row + r, src.height, p.border);
      const int x0 = first_pixel + 8 * u;
      if (y >= 0 && x0 >= 0 && x0 + 8 <= src.width) {
        const Pixel* row = src.row(y) + channel;
#pragma unroll
        for (int b = 0; b < 8; ++b) pending[s][b] = __ldg(row + (x0 + b) * channels);
      } else {
#pragma unroll
        for (int b = 0; b < 8; ++b) pending[s][b] = element(y, column_source[8 * u + b]);
      }
    });
  };
  // Byte d of each pixel's word v is its digit d: float, x 2^s rounded to an integer (|v| <= 2^22
  // inside the window) plus 0x808080, so byte d is digit d + 128 of v in balanced base 256 and
  // XOR 0x80 makes it the signed digit; 16-bit and 8-bit, the pixel itself. Staged float pixels
  // outside the window (read by no output that is stored) may be larger; their digits are garbage
  // that meets only zero weights or discarded outputs.
  const auto store_chunk = [&](int chunk, const float(&pixel_scale)[2]) {
    for_each_step([&](int s, int r, int u) {
      unsigned v[8];
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        if constexpr (kFloat) {
          v[b] = static_cast<unsigned>(__float2int_rn(pending[s][b] * pixel_scale[0] * pixel_scale[1])) + 0x808080u;
        } else {
          v[b] = pending[s][b];
        }
      }
      constexpr unsigned kFlip = Planes::signed_digits ? 0x80808080u : 0u;
      const int staged = 16 * chunk + r;
      unsigned char* low = ring + (staged & (RingRows - 1)) * slot_bytes + 16 * u;
      unsigned char* high = ring + ((staged - 8) & (RingRows - 1)) * slot_bytes + 16 * u + 4;
#pragma unroll
      for (int d = 0; d < kPlanes; ++d) {
        const unsigned pair = static_cast<unsigned>(d) | ((4u + static_cast<unsigned>(d)) << 4);  // byte d of x, of y
        const unsigned w0 = __byte_perm(__byte_perm(v[0], v[1], pair), __byte_perm(v[2], v[3], pair), 0x5410u) ^ kFlip;
        const unsigned w1 = __byte_perm(__byte_perm(v[4], v[5], pair), __byte_perm(v[6], v[7], pair), 0x5410u) ^ kFlip;
        *reinterpret_cast<unsigned*>(low + 2 * d * kPlane) = w0;
        *reinterpret_cast<unsigned*>(low + 2 * d * kPlane + 8) = w1;
        *reinterpret_cast<unsigned*>(high + 2 * d * kPlane) = w0;
        *reinterpret_cast<unsigned*>(high + 2 * d * kPlane + 8) = w1;
      }
    });
  };

  const auto power_of_two = [](int n) { return __int_as_float((n + 127) << 23); };
  for (int s0 = static_cast<int>(blockIdx.y) * strip_rows; s0 < src.height;
       s0 += static_cast<int>(gridDim.y) * strip_rows) {
    const int rows = min(strip_rows, src.height - s0);
    const int out_chunks = (rows + 15) / 16;
    const int first_row = s0 - p.anchor_y;  // input row of staged chunk 0, row 0
    __syncthreads();                        // the previous strip's tile is stored and its maximum read

    // Float: 2^s and 2^(16 - s - e) each as two factors in float's normal range (multiplying by
    // them is exact while the products stay normal). 16-bit: unused (no scaling).
    float pixel_scale[2] = {1.0f, 1.0f};
    float out_scale[2] = {1.0f, 1.0f};
    if constexpr (kFloat) {
      // The window's largest magnitude (as bits: a NaN or an infinity compares above every finite
      // value), over the rows and columns its outputs read.
      unsigned largest = p.border == BorderRule::constant ? __float_as_uint(p.border_value) & 0x7FFFFFFFu : 0u;
      {
        // Items of 16 rows of one column, 16 loads in flight a thread; consecutive items are
        // consecutive columns, so a warp's loads of a row coalesce.
        constexpr int kRowsAnItem = 16;
        const int columns = tile_pixels + p.kw - 1;
        const int items = columns * ((rows + p.kh - 1 + kRowsAnItem - 1) / kRowsAnItem);
        const int window_end = first_row + rows + p.kh - 1;
        for (int item = tid; item < items; item += kThreads) {
          const int group = item / columns;
          const int column = column_source[item - group * columns];
          const int top = first_row + group * kRowsAnItem;
          float v[kRowsAnItem];
#pragma unroll
          for (int k = 0; k < kRowsAnItem; ++k) {
            const int y = top + k < window_end ? interpolate_border(top + k, src.height, p.border) : -1;
            v[k] = y >= 0 && column >= 0 ? element(y, column) : 0.0f;
          }
#pragma unroll
          for (int k = 0; k < kRowsAnItem; ++k) largest = max(largest, __float_as_uint(v[k]) & 0x7FFFFFFFu);
        }
      }
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        largest = max(largest, __shfl_xor_sync(0xFFFFFFFFu, largest, offset));
      if (lane == 0) warp_max[warp] = largest;
      __syncthreads();
      largest = max(max(warp_max[0], warp_max[1]), max(warp_max[2], warp_max[3]));
      int scale_exponent = 0;  // s
      if (largest != 0u && largest < 0x7F800000u) {
        int e = 0;
        frexpf(__uint_as_float(largest), &e);  // M in [2^(e-1), 2^e)
        scale_exponent = 22 - e;
      }
      const int out_exponent = 16 - scale_exponent - taps.exponent;
      if (largest >= 0x7F800000u || out_exponent < -252 || out_exponent > 252) {
        // Direct FP32 sums for this strip, a thread an output.
        for (int idx = tid; idx < rows * kP; idx += kThreads) {
          const int r = idx / kP;
          const int x = idx - r * kP;
          if (x >= tile_pixels) continue;
          float sum = p.delta;
          for (int i = 0; i < p.kh; ++i) {
            const int y = interpolate_border(s0 + r - p.anchor_y + i, src.height, p.border);
            for (int k = 0; k < p.kw; ++k)
              sum = fmaf(__ldg(weights + i * p.kw + k), element(y, column_source[x + k]), sum);
          }
          dst.row(s0 + r)[(p0 + x) * channels + channel] = sum;
        }
        continue;
      }
      pixel_scale[0] = power_of_two(scale_exponent / 2);
      pixel_scale[1] = power_of_two(scale_exponent - scale_exponent / 2);
      out_scale[0] = power_of_two(out_exponent / 2);
      out_scale[1] = power_of_two(out_exponent - out_exponent / 2);
    }

    for (int c = 0; c < kAhead; ++c) {
      load_chunk(first_row + 16 * c);
      store_chunk(c, pixel_scale);
    }
    load_chunk(first_row + 16 * kAhead);
    for (int m = 0; m < out_chunks; ++m) {
      // 1. Staged chunk m + kAhead into the ring, the next one's loads under way.
      store_chunk(m + kAhead, pixel_scale);
      if (m + 2 <= out_chunks) load_chunk(first_row + 16 * (m + kAhead + 1));
      __syncthreads();  // chunks m .. m + kAhead staged; the previous output tile is stored

      // 2. Output chunk m: the warp's 4 n-tiles over every MMA, the planes from the top digit
      //    down, each into the chains its products belong to (DensePlanes).
      const int b0 = 4 * warp;
      const unsigned char* window = ring + 16 * b0;
      int acc[kChains][4][4];
      DenseChunk chunk = DenseChunk::at(t, true, Chunks, p.kh);  // column-major K: this lane's chunk of MMA q
      const auto mma_step = [&](int q, auto first) {
        constexpr bool kFirst = decltype(first)::value;
        const unsigned char* slot;
        if constexpr (kColumnMajor) {
          slot = window + 16 * chunk.chunk + ((16 * m + chunk.row + g) & (RingRows - 1)) * slot_bytes;
          chunk.advance_column_major(p.kh);
        } else {
          const DenseChunk c = DenseChunk::at(4 * q + t, false, Chunks, p.kh);
          slot = window + 16 * c.chunk + ((16 * m + c.row + g) & (RingRows - 1)) * kRowMajorSlot;
        }
        const uint4 b = fragments[q * 32 + lane];
        const Second b2 = fragments2[q * 32 + lane];
        const auto b_word = [&](int digit, int half) -> unsigned {
          if (digit == 0) return half == 0 ? b.x : b.y;
          if (digit == 1) return half == 0 ? b.z : b.w;
          if (digit == 2) return half == 0 ? b2.x : b2.y;
          if constexpr (kDigits == 4) return half == 0 ? b2.z : b2.w;
          return 0u;
        };
        unsigned a[4][4];
#pragma unroll
        for (int plane = kPlanes - 1; plane >= 0; --plane) {
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            const uint4 x = *reinterpret_cast<const uint4*>(slot + 2 * plane * kPlane + 16 * n);
            a[n][0] = x.x;
            a[n][1] = x.y;
            a[n][2] = x.z;
            a[n][3] = x.w;
          }
#pragma unroll
          for (int c = 0; c < kChains; ++c) {
            const int digit = kTop - c - plane;
            if (digit < 0 || digit >= kDigits) continue;
            // The first plane chain c meets: the top one, or the one whose product with digit 0
            // is the chain's (16-bit chain 4: the low bytes times d0).
            const bool chain_starts = plane == min(kPlanes - 1, kTop - c);
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              if (kFirst && chain_starts) {
                mma_i8<true, Planes::signed_digits>(acc[c][n], a[n], b_word(digit, 0), b_word(digit, 1));
              } else {
                mma_i8<false, Planes::signed_digits>(acc[c][n], a[n], b_word(digit, 0), b_word(digit, 1));
              }
            }
          }
        }
      };
      mma_step(0, std::true_type{});
#pragma unroll 1
      for (int q = 1; q < mmas; ++q) mma_step(q, std::false_type{});

        // C holds rows g and g + 8, pixels 2t and 2t + 1 of each n-tile.
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int k = 0; k < 4; k += 2) {
          const int pixel = 8 * (b0 + n) + 2 * t;
          unsigned char* to = out_tile + (g + 8 * (k >> 1)) * kOut + static_cast<int>(sizeof(Pixel)) * pixel;
          if constexpr (kFloat) {
            float v[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const float sum = join_chains(acc[0][n][k + h], acc[1][n][k + h], acc[2][n][k + h]);
              v[h] = fmaf(sum * out_scale[0], out_scale[1], p.delta);
            }
            *reinterpret_cast<float2*>(to) = make_float2(v[0], v[1]);
          } else {
            // The chains joined in double (exact while the sum stays below 2^53; beyond it the
            // FMAs' rounding is in the split's bound), scaled by the exact 2^-e with delta added
            // in one rounding, rounded half to even and saturated.
            const double scale = __hiloint2double((1023 - taps.exponent) << 20, 0);
            unsigned v[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              double sum = static_cast<double>(acc[0][n][k + h]);
#pragma unroll
              for (int c = 1; c < kChains; ++c) sum = fma(sum, 256.0, static_cast<double>(acc[c][n][k + h]));
              v[h] = min(__double2uint_rn(fma(sum, scale, static_cast<double>(p.delta))), kLargest);
            }
            if constexpr (sizeof(Pixel) == 2) {
              *reinterpret_cast<unsigned*>(to) = v[0] | (v[1] << 16);
            } else {
              *reinterpret_cast<unsigned short*>(to) = static_cast<unsigned short>(v[0] | (v[1] << 8));
            }
          }
        }
      __syncthreads();  // output tile complete; the ring's chunk m is free again

      // 3. The output tile to global memory.
      const int rows_left = min(16, rows - 16 * m);
      if (vector_aligned) {
        constexpr int kVector = 16 / static_cast<int>(sizeof(Pixel));  // pixels a 16-byte store
        for (int idx = tid; idx < 16 * (kP / kVector); idx += kThreads) {
          const int r = idx / (kP / kVector);
          const int x = kVector * (idx - r * (kP / kVector));
          if (r >= rows_left || x >= tile_pixels) continue;
          const unsigned char* from = out_tile + r * kOut + static_cast<int>(sizeof(Pixel)) * x;
          Pixel* to = dst.row(s0 + 16 * m + r) + p0 + x;
          if (x + kVector <= tile_pixels) {
            __stcs(reinterpret_cast<uint4*>(to), *reinterpret_cast<const uint4*>(from));
          } else {
            for (int k = 0; k < tile_pixels - x; ++k) to[k] = reinterpret_cast<const Pixel*>(from)[k];
          }
        }
      } else {
        for (int idx = tid; idx < 16 * kP; idx += kThreads) {
          const int r = idx / kP;
          const int x = idx - r * kP;
          if (r >= rows_left || x >= tile_pixels) continue;
          dst.row(s0 + 16 * m + r)[(p0 + x) * channels + channel] =
              *reinterpret_cast<const Pixel*>(out_tile + r * kOut + static_cast<int>(sizeof(Pixel)) * x);
        }
      }
    }
  }
}

}  // namespace cuconv::kernels
