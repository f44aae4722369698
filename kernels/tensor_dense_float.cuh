#pragma once
/// @file tensor_dense_float.cuh
/// `tensor` for dense filters up to 31 x 31 on float images, on byte MMAs in block floating point.
/// Each block scales its window of the image by a power of two 2^s chosen from the window's largest
/// magnitude M (M 2^s in (2^21, 2^22]) and writes every pixel as three signed base-256 digits of
/// the integer nearest x 2^s; the weights are integers H = w 2^e in three signed digits as for
/// 8-bit images (src/separable.cpp, dense_tensor_split_float). m16n8k32 s8 x s8 -> s32 MMAs sum
/// the six digit products of weight 2^16 and more, grouped by weight (2^32, 2^24, 2^16) into three
/// exact 32-bit chains; the epilogue joins them with two float FMAs and scales by 2^(16 - s - e).
/// What is dropped (three low products, the pixels' and weights' rounding, the float epilogue) is
/// bounded relative to sum|w| * M by dense_tensor_split_float, which admits a filter only well
/// inside the 32F pass rule. A window holding a NaN or an infinity, or whose scales pass 2^+-252,
/// is summed directly in FP32 by that block instead (row-major FMAs from delta, as `basic`).
/// Block and thread mapping: 4 warps own P = 128 output pixels of a row of one channel (channels
/// interleave in blockIdx.x, so neighbouring blocks read the same pixels) and walk a strip of rows
/// 16 at a time; the ring holds the digit planes of the next chunks of 16 input rows (32 rows for
/// kh <= 17, 64 beyond), staged as kernels/tensor_dense.cuh stages bytes; each warp computes 4
/// n-tiles (8 outputs x 16 rows) over all MMAs and the block stores the float tile.
#include "tensor_dense.cuh"

#include <cstdint>
#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kDenseFloatMaxSide = 31;
inline constexpr int kDenseFloatPixels = 128;  ///< output pixels of a row per block
inline constexpr int kDenseFloatWarps = 4;

/// 8-byte chunks a filter row reads for an n-tile of 8 outputs: ceil((kw + 7) / 8).
__host__ __device__ constexpr int dense_float_chunks(int kw) { return (kw + 14) / 8; }
/// Ring rows: the chunk computed and the next ones up to its last halo row, a power of two.
__host__ __device__ constexpr int dense_float_ring_rows(int kh) { return kh <= 17 ? 32 : 64; }
/// Staged pixels of a row: the tile and what the last n-tile's chunks reach past it.
__host__ __device__ constexpr int dense_float_plane(int chunks) { return kDenseFloatPixels + 8 * (chunks - 1); }
/// K order: column-major for 5 chunks a row (DenseChunk), row-major otherwise.
__host__ __device__ constexpr bool dense_float_column_major(int chunks) { return chunks == 5; }
/// Bytes of a ring slot (three digit planes of two rows): the residue modulo 128 that puts the 8
/// lanes of each phase of an A-fragment load on distinct banks for this K order and filter height
/// (16 * chunks row-major, as in the 8-bit kernel; by kh % 8 column-major).
__host__ __device__ constexpr int dense_float_slot(int chunks, int kh) {
  constexpr int kColumnResidue[8] = {16, 64, 32, 32, 16, 112, 16, 16};
  const int residue = dense_float_column_major(chunks) ? kColumnResidue[kh % 8] : 16 * chunks;
  return (6 * dense_float_plane(chunks) + 127 - residue) / 128 * 128 + residue;
}
/// Bytes of a row of the float output tile, 16 more than the tile so rows start in different banks.
__host__ __device__ constexpr int dense_float_out_stride() { return kDenseFloatPixels * 4 + 16; }
__host__ __device__ constexpr int dense_float_shared_bytes(int chunks, int ring_rows, int kh) {
  return ring_rows * dense_float_slot(chunks, kh) + 16 * dense_float_out_stride() + dense_mmas(kh, chunks) * 32 * 24 +
         dense_float_plane(chunks) * 4 + 16;
}

/// The weights H = d0 + 256 d1 + 65536 d2 (row-major kh x kw) and their exponent: w ~ H 2^-e.
struct alignas(4) TensorDenseFloatTaps {
  signed char digit[3][kDenseFloatMaxSide * kDenseFloatMaxSide];
  int exponent;
};

/// Block (bx, by): channel bx % channels, pixels [P (bx / channels), + P) of the rows of strips
/// by, by + gridDim.y, ... of `strip_rows` rows (a multiple of 16). `weights`: the float filter
/// (kh x kw) for windows summed directly; `vector_aligned`: one channel with 16-byte aligned
/// output rows.
template <int Chunks, int RingRows>
__global__ void __launch_bounds__(32 * kDenseFloatWarps, 2)
    tensor_dense_float_kernel(PlaneView<const float> src, PlaneView<float> dst, int channels, ConvParams p,
                              TensorDenseFloatTaps taps, const float* weights, bool vector_aligned, int strip_rows) {
  using namespace tensor_detail;
  constexpr int kThreads = 32 * kDenseFloatWarps;
  constexpr int kP = kDenseFloatPixels;
  constexpr int kPlane = dense_float_plane(Chunks);
  constexpr bool kColumnMajor = dense_float_column_major(Chunks);
  // Row-major K: one slot size for every height (a constant); column-major: by kh % 8.
  constexpr int kRowMajorSlot = dense_float_slot(Chunks, 0);
  const int slot_bytes = kColumnMajor ? dense_float_slot(Chunks, p.kh) : kRowMajorSlot;
  constexpr int kOut = dense_float_out_stride();
  constexpr int kUnits = kPlane / 8;                               // 8-pixel steps of a staged row
  constexpr int kSteps = (16 * kUnits + kThreads - 1) / kThreads;  // steps a thread and chunk
  static_assert(RingRows == 32 || RingRows == 64, "the two rings of dense_float_ring_rows");
  constexpr int kAhead = RingRows == 32 ? 1 : 2;  // chunks staged past the one computed
  static_assert(kP / 8 == 4 * kDenseFloatWarps, "a warp computes 4 n-tiles");

  extern __shared__ __align__(16) unsigned char dense_shared[];
  unsigned char* ring = dense_shared;
  auto* out_tile = ring + RingRows * slot_bytes;
  auto* fragments = reinterpret_cast<uint4*>(out_tile + 16 * kOut);
  const int mmas = dense_mmas(p.kh, Chunks);
  auto* fragments2 = reinterpret_cast<uint2*>(fragments + mmas * 32);
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

  for (int j = tid; j < kPlane; j += kThreads) column_source[j] = interpolate_border(first_pixel + j, src.width, p.border);
  constexpr int kDigitWords = (3 * kDenseFloatMaxSide * kDenseFloatMaxSide + 3) / 4;
  for (int k = tid; k < kDigitWords; k += kThreads)
    reinterpret_cast<unsigned*>(out_tile)[k] = reinterpret_cast<const unsigned*>(taps.digit)[k];
  __syncthreads();
  build_dense_fragments<Chunks>(fragments, fragments2, out_tile, kDenseFloatMaxSide * kDenseFloatMaxSide, p.kw, p.kh,
                                mmas, kColumnMajor);
  __syncthreads();

  const auto element = [&](int y, int column) -> float {  // mapped row and column; -1: the border value
    return y < 0 || column < 0 ? p.border_value : __ldg(src.row(y) + (column * channels + channel));
  };

  // Staging: step s of this thread is staged row r, pixels 8u .. 8u + 7, loaded one chunk ahead
  // as floats and written as digits once the block's scale is known.
  float pending[kSteps][8];
  const auto for_each_step = [&](auto&& body) {
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int idx = tid + s * kThreads;
      if (idx >= 16 * kUnits) break;
      const int r = idx / kUnits;
      body(s, r, idx - r * kUnits);
    }
  };
  const auto load_chunk = [&](int first_row) {
    for_each_step([&](int s, int r, int u) {
      const int y = interpolate_border(first_row + r, src.height, p.border);
      const int x0 = first_pixel + 8 * u;
      if (y >= 0 && x0 >= 0 && x0 + 8 <= src.width) {
        const float* row = src.row(y) + channel;
#pragma unroll
        for (int b = 0; b < 8; ++b) pending[s][b] = __ldg(row + (x0 + b) * channels);
      } else {
#pragma unroll
        for (int b = 0; b < 8; ++b) pending[s][b] = element(y, column_source[8 * u + b]);
      }
    });
  };
  // x 2^s rounded to an integer v (|v| <= 2^22 inside the window) plus 0x808080: byte d is digit
  // d + 128 of v in balanced base 256; XOR 0x80 makes it the signed digit. Staged pixels outside
  // the window (read by no output that is stored) may be larger; their digits are garbage that
  // meets only zero weights or discarded outputs.
  const auto store_chunk = [&](int chunk, const float (&pixel_scale)[2]) {
    for_each_step([&](int s, int r, int u) {
      unsigned v[8];
#pragma unroll
      for (int b = 0; b < 8; ++b)
        v[b] = static_cast<unsigned>(__float2int_rn(pending[s][b] * pixel_scale[0] * pixel_scale[1])) + 0x808080u;
      const int staged = 16 * chunk + r;
      unsigned char* low = ring + (staged & (RingRows - 1)) * slot_bytes + 16 * u;
      unsigned char* high = ring + ((staged - 8) & (RingRows - 1)) * slot_bytes + 16 * u + 4;
#pragma unroll
      for (int d = 0; d < 3; ++d) {
        const unsigned pair = static_cast<unsigned>(d) | ((4u + static_cast<unsigned>(d)) << 4);  // byte d of x, of y
        const unsigned w0 =
            __byte_perm(__byte_perm(v[0], v[1], pair), __byte_perm(v[2], v[3], pair), 0x5410u) ^ 0x80808080u;
        const unsigned w1 =
            __byte_perm(__byte_perm(v[4], v[5], pair), __byte_perm(v[6], v[7], pair), 0x5410u) ^ 0x80808080u;
        *reinterpret_cast<unsigned*>(low + 2 * d * kPlane) = w0;
        *reinterpret_cast<unsigned*>(low + 2 * d * kPlane + 8) = w1;
        *reinterpret_cast<unsigned*>(high + 2 * d * kPlane) = w0;
        *reinterpret_cast<unsigned*>(high + 2 * d * kPlane + 8) = w1;
      }
    });
  };

  for (int s0 = static_cast<int>(blockIdx.y) * strip_rows; s0 < src.height;
       s0 += static_cast<int>(gridDim.y) * strip_rows) {
    const int rows = min(strip_rows, src.height - s0);
    const int out_chunks = (rows + 15) / 16;
    const int first_row = s0 - p.anchor_y;  // input row of staged chunk 0, row 0
    __syncthreads();  // the previous strip's tile is stored and its maximum read

    // 1. The window's largest magnitude (as bits: a NaN or an infinity compares above every finite
    //    value), over the rows and columns its outputs read.
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
    for (int offset = 16; offset > 0; offset /= 2) largest = max(largest, __shfl_xor_sync(0xFFFFFFFFu, largest, offset));
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
          for (int k = 0; k < p.kw; ++k) sum = fmaf(__ldg(weights + i * p.kw + k), element(y, column_source[x + k]), sum);
        }
        dst.row(s0 + r)[(p0 + x) * channels + channel] = sum;
      }
      continue;
    }
    // 2^s and 2^(16 - s - e) each as two factors in float's normal range: multiplying by them is
    // exact while the products stay normal.
    const auto power_of_two = [](int n) { return __int_as_float((n + 127) << 23); };
    const float pixel_scale[2] = {power_of_two(scale_exponent / 2), power_of_two(scale_exponent - scale_exponent / 2)};
    const float out_scale[2] = {power_of_two(out_exponent / 2), power_of_two(out_exponent - out_exponent / 2)};

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

      // 2. Output chunk m: the warp's 4 n-tiles over every MMA. Chains by weight: acc[0] 2^32
      //    (pixel digit 2 x weight digit 2), acc[1] 2^24 (2 x 1, 1 x 2), acc[2] 2^16 (2 x 0, 1 x 1, 0 x 2).
      const int b0 = 4 * warp;
      const unsigned char* window = ring + 16 * b0;
      int acc[3][4][4];
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
        const uint2 b2 = fragments2[q * 32 + lane];
        unsigned a[4][4];
        const auto load_plane = [&](int d) {
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            const uint4 x = *reinterpret_cast<const uint4*>(slot + 2 * d * kPlane + 16 * n);
            a[n][0] = x.x;
            a[n][1] = x.y;
            a[n][2] = x.z;
            a[n][3] = x.w;
          }
        };
        load_plane(2);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          mma_i8<kFirst, true>(acc[0][n], a[n], b2.x, b2.y);
          mma_i8<kFirst, true>(acc[1][n], a[n], b.z, b.w);
          mma_i8<kFirst, true>(acc[2][n], a[n], b.x, b.y);
        }
        load_plane(1);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          mma_i8<false, true>(acc[1][n], a[n], b2.x, b2.y);
          mma_i8<false, true>(acc[2][n], a[n], b.z, b.w);
        }
        load_plane(0);
#pragma unroll
        for (int n = 0; n < 4; ++n) mma_i8<false, true>(acc[2][n], a[n], b2.x, b2.y);
      };
      mma_step(0, std::true_type{});
#pragma unroll 1
      for (int q = 1; q < mmas; ++q) mma_step(q, std::false_type{});

      // C holds rows g and g + 8, pixels 2t and 2t + 1 of each n-tile.
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int k = 0; k < 4; k += 2) {
          float v[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float sum = join_chains(acc[0][n][k + h], acc[1][n][k + h], acc[2][n][k + h]);
            v[h] = fmaf(sum * out_scale[0], out_scale[1], p.delta);
          }
          const int pixel = 8 * (b0 + n) + 2 * t;
          *reinterpret_cast<float2*>(out_tile + (g + 8 * (k >> 1)) * kOut + 4 * pixel) = make_float2(v[0], v[1]);
        }
      __syncthreads();  // output tile complete; the ring's chunk m is free again

      // 3. The output tile to global memory.
      const int rows_left = min(16, rows - 16 * m);
      if (vector_aligned) {
        for (int idx = tid; idx < 16 * (kP / 4); idx += kThreads) {
          const int r = idx / (kP / 4);
          const int x = 4 * (idx - r * (kP / 4));
          if (r >= rows_left || x >= tile_pixels) continue;
          const float4 value = *reinterpret_cast<const float4*>(out_tile + r * kOut + 4 * x);
          float* to = dst.row(s0 + 16 * m + r) + p0 + x;
          if (x + 4 <= tile_pixels) {
            __stcs(reinterpret_cast<float4*>(to), value);
          } else {
            const float parts[4] = {value.x, value.y, value.z, value.w};
            for (int k = 0; k < tile_pixels - x; ++k) to[k] = parts[k];
          }
        }
      } else {
        for (int idx = tid; idx < 16 * kP; idx += kThreads) {
          const int r = idx / kP;
          const int x = idx - r * kP;
          if (r >= rows_left || x >= tile_pixels) continue;
          dst.row(s0 + 16 * m + r)[(p0 + x) * channels + channel] =
              *reinterpret_cast<const float*>(out_tile + r * kOut + 4 * x);
        }
      }
    }
  }
}

}  // namespace cuconv::kernels
