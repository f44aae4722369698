// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_separable.cuh
/// `tensor`: separable filters on 8-bit images with the horizontal pass on tensor cores (FP16
/// MMA, FP32 accumulation) and the vertical pass in FP32 FMAs.
///  - Horizontal pass as a matrix product: a tile of 16 image rows x K input elements (pixels are
///    exact in FP16) times a banded Toeplitz matrix (K x 8 outputs) of the horizontal weights.
///    Interleaved channels need no split: element e of an output row takes elements
///    e + (j - R) * C, so the band simply has a stride of C.
///  - Exact row sums: the host scales the horizontal weights by a power of two 2^e and rounds
///    them to integers H = 2048 * hi + lo with |hi| <= 2048 and |lo| <= 1024, both exact in FP16
///    (src/filter/rank1_splits.cpp, tensor_split). Two MMAs per block accumulate sum(x * hi) and
///    sum(x * lo) separately; every partial sum is an integer below 2^24, so the accumulation is
///    exact however the tensor core aligns and rounds. The row sum 2048 * acc_hi + acc_lo is then
///    rounded once to float, and the vertical weights carry the 2^-e.
///  - The Toeplitz fragments depend only on d = 16 * k_step - 8 * n_tile, so each lane builds
///    the few non-zero ones once and keeps them in registers.
/// Block and thread mapping: a block of W warps owns 64 * W output elements of a row and walks a
/// strip of rows 16 at a time. Per chunk of 16 input rows the threads stage the rows (with their
/// halo of H elements each side, border rule applied) as FP16 in shared memory, 16 elements a
/// thread and step, loaded one chunk ahead into registers so the loads overlap the other two
/// phases; each warp then multiplies 64 output elements (8 n-tiles) and writes the row sums to a
/// two-chunk ring in shared memory; then each thread sums 4 adjacent output elements down 8 rows
/// with the vertical weights from the ring and stores them. Output chunk k needs row-sum chunks k
/// and k+1.
#include "common.cuh"
#include "fast_pack.cuh"
#include "mma.cuh"
#include "tensor_staging.cuh"

#include <cstdint>

namespace cuconv::kernels {

inline constexpr int kTensorChunkRows = 16;  ///< rows per MMA tile (m16)
inline constexpr int kTensorRingPad = 8;     ///< floats after each row-sum row (STS.64 without conflicts)
inline constexpr int kTensorStagePad = 8;    ///< halves after each staged row (ldmatrix without conflicts)

/// Elements of halo each side of a block's tile: R * C rounded up to a whole k-step of 16.
__host__ __device__ constexpr int tensor_halo(int channels, int radius) { return (radius * channels + 15) / 16 * 16; }

/// Output elements of a row per block of `warps` warps, and halves in one staged row.
__host__ __device__ constexpr int tensor_tile_elems(int warps) { return 64 * warps; }
__host__ __device__ constexpr int tensor_stage_stride(int warps, int channels, int radius) {
  return tensor_tile_elems(warps) + 2 * tensor_halo(channels, radius) + kTensorStagePad;
}

/// Dynamic shared memory of one block: 16 staged FP16 rows, a ring of two 16-row chunks of row
/// sums, and where each staged column reads from (the border rule at the row's ends).
__host__ __device__ constexpr int tensor_shared_bytes(int warps, int channels, int radius) {
  return kTensorChunkRows * tensor_stage_stride(warps, channels, radius) * 2 +
         2 * kTensorChunkRows * (tensor_tile_elems(warps) + kTensorRingPad) * 4 +
         (tensor_tile_elems(warps) + 2 * tensor_halo(channels, radius)) * 4;
}

/// The weights: horizontal integer parts as FP16 bits (H = 2048 * hi + lo), vertical weights
/// already divided by 2^e. A kernel parameter, like fast's FilterTaps.
template <int K>
struct TensorSeparableTaps {
  unsigned short hi[K];
  unsigned short lo[K];
  float vertical[K];
};

namespace tensor_detail {

/// FP16 bits of Toeplitz entry B[k][n] of block d: the horizontal tap j with
/// k - n + d - Halo = (j - R) * C, or 0.
template <int C, int R, int Halo, int K>
__device__ __forceinline__ unsigned toeplitz_entry(const unsigned short (&w)[K], int d, int k, int n) {
  const int offset = k - n + d - Halo;
  if (offset % C != 0) return 0u;
  const int j = offset / C + R;
  return (j < 0 || j >= K) ? 0u : static_cast<unsigned>(w[j]);
}

/// B fragment (m16n8k16, col-major B) of block d for this lane: {B[2t][g], B[2t+1][g]} and
/// {B[2t+8][g], B[2t+9][g]}, lane = 4g + t.
template <int C, int R, int Halo, int K>
__device__ __forceinline__ void toeplitz_fragment(const unsigned short (&w)[K], int d, int lane, unsigned (&b)[2]) {
  const int g = lane >> 2;
  const int t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int k = 2 * t + 8 * h;
    b[h] = toeplitz_entry<C, R, Halo>(w, d, k, g) | (toeplitz_entry<C, R, Halo>(w, d, k + 1, g) << 16);
  }
}

}  // namespace tensor_detail

/// Block (bx, by) filters elements [bx * 64W, (bx + 1) * 64W) of rows [s0, s0 + strip_rows),
/// s0 = by * strip_rows, by + gridDim.y, ... (strip_rows a multiple of 16). Square centred
/// (2R+1)^2 filters, 8-bit in and out, C interleaved channels; rows 16-byte aligned when
/// `vector_aligned`.
template <int C, int R, int Warps>
__global__ void __launch_bounds__(32 * Warps)
    tensor_separable_kernel(PlaneView<const std::uint8_t> src, PlaneView<std::uint8_t> dst, ConvParams p,
                            TensorSeparableTaps<2 * R + 1> taps, bool vector_aligned, int strip_rows, bool clamp_low) {
  using namespace tensor_detail;
  constexpr int K = 2 * R + 1;
  constexpr int kThreads = 32 * Warps;
  constexpr int kTile = tensor_tile_elems(Warps);
  constexpr int kHalo = tensor_halo(C, R);
  constexpr int kStage = tensor_stage_stride(Warps, C, R);
  constexpr int kRingStride = kTile + kTensorRingPad;
  constexpr int kStagedElems = kTile + 2 * kHalo;
  constexpr int kVectors = kStagedElems / 16;                                      // 16-element steps of a staged row
  constexpr int kSlots = (kTensorChunkRows * kVectors + kThreads - 1) / kThreads;  // steps a thread
  constexpr int kKSteps = (64 + 2 * kHalo) / 16;                                   // k-steps of one warp's 64 outputs
  // Non-zero Toeplitz blocks: d in [Halo - RC - 15, Halo + RC + 7], d a multiple of 8.
  constexpr int kDLow = (kHalo - R * C - 15 + 7 + 64) / 8 - 8;  // ceil(x / 8) for x > -64
  constexpr int kDHigh = (kHalo + R * C + 7) / 8;
  constexpr int kBlocks = kDHigh - kDLow + 1;

  extern __shared__ __align__(16) unsigned char tensor_shared[];
  auto* staged = reinterpret_cast<unsigned short*>(tensor_shared);
  auto* ring = reinterpret_cast<float*>(tensor_shared + kTensorChunkRows * kStage * 2);
  auto* column_source = reinterpret_cast<int*>(ring + 2 * kTensorChunkRows * kRingStride);

  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int row_elems = src.width * C;
  const int c0 = static_cast<int>(blockIdx.x) * kTile;

  // Where staged column sc reads in a row: element c0 - Halo + sc through the border rule (-1:
  // the constant border value). Used at the row's ends only.
  build_column_map<C>(column_source, kStagedElems, c0 - kHalo, src.width, p.border);

  // The Toeplitz fragments, high and low parts, for every non-zero block, built from a copy of the
  // taps in shared memory (staging space, unused until the first chunk): indexed per lane, kernel
  // parameters would serialize.
  auto* tap_bits = reinterpret_cast<unsigned short*>(staged);
  for (int k = static_cast<int>(threadIdx.x); k < 2 * K; k += kThreads)
    tap_bits[k] = k < K ? taps.hi[k] : taps.lo[k - K];
  __syncthreads();
  const auto& shared_hi = *reinterpret_cast<const unsigned short(*)[K]>(tap_bits);
  const auto& shared_lo = *reinterpret_cast<const unsigned short(*)[K]>(tap_bits + K);
  unsigned b_hi[kBlocks][2];
  unsigned b_lo[kBlocks][2];
#pragma unroll
  for (int i = 0; i < kBlocks; ++i) {
    toeplitz_fragment<C, R, kHalo>(shared_hi, 8 * (kDLow + i), lane, b_hi[i]);
    toeplitz_fragment<C, R, kHalo>(shared_lo, 8 * (kDLow + i), lane, b_lo[i]);
  }
  const unsigned border_byte = static_cast<unsigned>(p.border_value);
  __syncthreads();  // column_source complete

  // 16 bytes of staged row r, elements from c0 - Halo + 16q, into registers: one vector load inside
  // the row, the column map at its ends, the border value for rows outside a constant border.
  uint4 pending[kSlots];
  // Step s of this thread: staged row r, elements 16q .. 16q + 15; false past the last step. The
  // same every chunk, so found once.
  int step_row[kSlots];
  int step_vector[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int idx = static_cast<int>(threadIdx.x) + s * kThreads;
    step_row[s] = idx / kVectors;
    step_vector[s] = idx - step_row[s] * kVectors;
  }
  const auto step = [&](int s, int& r, int& q) {
    r = step_row[s];
    q = step_vector[s];
    return static_cast<int>(threadIdx.x) + s * kThreads < kTensorChunkRows * kVectors;
  };
  const auto load_chunk = [&](int first_row) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      int r, q;
      if (!step(s, r, q)) break;
      const int y = interpolate_border(first_row + r, src.height, p.border);
      const int e0 = c0 - kHalo + 16 * q;
      if (y < 0) {
        const unsigned b = border_byte * 0x01010101u;
        pending[s] = make_uint4(b, b, b, b);
      } else if (vector_aligned && e0 >= 0 && e0 + 16 <= row_elems) {
        pending[s] = __ldg(reinterpret_cast<const uint4*>(src.row(y) + e0));
      } else {
        pending[s] = gather_columns(src.row(y), column_source, q, border_byte);
      }
    }
  };
  // The registers as FP16 into the staging rows.
  const auto store_chunk = [&]() {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      int r, q;
      if (!step(s, r, q)) break;
      store_as_halves(staged + r * kStage + 16 * q, pending[s]);
    }
  };

  for (int s0 = static_cast<int>(blockIdx.y) * strip_rows; s0 < src.height;
       s0 += static_cast<int>(gridDim.y) * strip_rows) {
    const int out_chunks = (min(strip_rows, src.height - s0) + kTensorChunkRows - 1) / kTensorChunkRows;
    const int first_row = s0 - p.anchor_y;  // input row of row-sum chunk 0, row 0
    load_chunk(first_row);
    for (int m = 0; m <= out_chunks; ++m) {
      // 1. Chunk m's input rows into the staging rows, and chunk m + 1's loads under way.
      store_chunk();
      if (m < out_chunks) load_chunk(first_row + 16 * (m + 1));
      __syncthreads();  // staged rows visible; the previous chunk's vertical pass is done with the ring

      // 2. Row sums of chunk m into ring slot m & 1: warp w, outputs c0 + 64w .. + 63.
      {
        float* slot = ring + (m & 1) * kTensorChunkRows * kRingStride;
        const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8;
        const int a_col = (lane >> 4) * 8;
        const unsigned short* a_base = staged + a_row * kStage + 64 * warp + a_col;
#pragma unroll
        for (int group = 0; group < 2; ++group) {
          float acc_hi[4][4] = {};
          float acc_lo[4][4] = {};
#pragma unroll
          for (int ks = 0; ks < kKSteps; ++ks) {
            bool used = false;
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              const int d8 = (16 * ks - 8 * (4 * group + n)) / 8;
              used = used || (d8 >= kDLow && d8 <= kDHigh);
            }
            if (!used) continue;
            unsigned a[4];
            ldmatrix_x4(a, a_base + 16 * ks);
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              const int d8 = (16 * ks - 8 * (4 * group + n)) / 8;
              if (d8 < kDLow || d8 > kDHigh) continue;
              mma_f16_f32(acc_hi[n], a, b_hi[d8 - kDLow]);
              mma_f16_f32(acc_lo[n], a, b_lo[d8 - kDLow]);
            }
          }
          const int g = lane >> 2;
          const int t = lane & 3;
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            const int col = 64 * warp + 8 * (4 * group + n) + 2 * t;
            *reinterpret_cast<float2*>(slot + g * kRingStride + col) =
                make_float2(fmaf(acc_hi[n][0], 2048.0f, acc_lo[n][0]), fmaf(acc_hi[n][1], 2048.0f, acc_lo[n][1]));
            *reinterpret_cast<float2*>(slot + (g + 8) * kRingStride + col) =
                make_float2(fmaf(acc_hi[n][2], 2048.0f, acc_lo[n][2]), fmaf(acc_hi[n][3], 2048.0f, acc_lo[n][3]));
          }
        }
      }
      __syncthreads();  // row sums visible; the staging rows are free again

      // 3. Output chunk k = m - 1 from row-sum chunks k and k + 1: thread = 4 elements x 8 rows.
      if (m >= 1) {
        const int k = m - 1;
        const int half = static_cast<int>(threadIdx.x) / (kTile / 4);  // rows 8 * half .. + 7 of the chunk
        const int col = 4 * (static_cast<int>(threadIdx.x) % (kTile / 4));
        const float* first = ring + (k & 1) * kTensorChunkRows * kRingStride + col;
        const float* second = ring + ((k + 1) & 1) * kTensorChunkRows * kRingStride + col;
        // Row-sum row s = 8 * half + u of the two chunks: three bases with compile-time offsets in u.
        const float* base_low = first + 8 * half * kRingStride;                // u < 8
        const float* base_mid = half == 0 ? first : second - 8 * kRingStride;  // 8 <= u < 16
        const float* base_high = second + (8 * half - 16) * kRingStride;       // u >= 16
        float acc[8][4];
#pragma unroll
        for (int r = 0; r < 8; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[r][c] = p.delta;
#pragma unroll
        for (int u = 0; u < 7 + K; ++u) {
          const float* row = u < 8 ? base_low : (u < 16 ? base_mid : base_high);
          const float4 v = *reinterpret_cast<const float4*>(row + u * kRingStride);
#pragma unroll
          for (int r = 0; r < 8; ++r) {
            const int i = u - r;
            if (i < 0 || i >= K) continue;
            acc[r][0] = fmaf(taps.vertical[i], v.x, acc[r][0]);
            acc[r][1] = fmaf(taps.vertical[i], v.y, acc[r][1]);
            acc[r][2] = fmaf(taps.vertical[i], v.z, acc[r][2]);
            acc[r][3] = fmaf(taps.vertical[i], v.w, acc[r][3]);
          }
        }
        // Rows of this thread inside the image and the strip, and whether its 4 elements are whole.
        const int e = c0 + col;
        const int first_out = s0 + 16 * k + 8 * half;
        const int rows_left = e < row_elems ? min(src.height, s0 + strip_rows) - first_out : 0;
        const bool whole = e + 4 <= row_elems && vector_aligned;
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          if (r >= rows_left) break;
          const unsigned word = round_pack_u8x4(clamp_low, acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
          std::uint8_t* out = dst.row(first_out + r) + e;
          if (whole) {
            __stcs(reinterpret_cast<unsigned*>(out), word);
          } else {
            for (int c = 0; c < 4 && e + c < row_elems; ++c) out[c] = static_cast<std::uint8_t>(word >> (8 * c));
          }
        }
      }
    }
  }
}

}  // namespace cuconv::kernels
