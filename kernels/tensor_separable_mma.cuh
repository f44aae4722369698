// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_separable_mma.cuh
/// `tensor`: separable filters on 8-bit images with both passes on tensor cores (FP16 MMA, FP32
/// accumulation), the row sums passed from the first MMA to the second in registers.
///  - Horizontal pass, transposed: R^T (16 outputs x 8 rows) = T^T (16 outputs x K elements, the
///    banded Toeplitz matrix of the horizontal weights) times X^T (K elements x 8 image rows, from
///    ldmatrix on the staged FP16 rows). The weights are integers H = 2048 hi + lo (split as for
///    the FP32-vertical kernel) scaled by the power of two 2^-sigma that keeps every row sum below
///    2^15; the hi and lo parts have their own accumulators, whose partial sums are integers of
///    the scaled grid below 2^24 units: exact however the tensor core aligns and rounds.
///  - R' = acc_hi + acc_lo (one float rounding) is split into an FP16 pair hi + lo. The C fragment
///    of R^T holds, per lane, output column g (and g + 8) of rows 2t, 2t + 1 (and the second
///    n-tile's 8 + 2t, 9 + 2t): exactly a B fragment of R (16 rows x 8 columns), so the vertical
///    pass needs no shared memory.
///  - Vertical pass: Y (16 output rows x 8 columns) = V (16 x 16S, Toeplitz of the vertical weights
///    V' = v 2^tau, hi + lo in FP16) times the row sums of S 16-row steps (S = 2 up to radius 8, 3
///    up to 15). The tensor core's FP32 sum loses bits relative to the largest of its terms, C
///    included, so no MMA starts from a C as large as its products: each older step's V'hi R'hi
///    has its own accumulator; the cross products V'hi R'lo and V'lo R'hi are summed first and
///    the last step's V'hi R'hi on top of them; V'lo R'lo is dropped. The error bound this leaves
///    is tensor_mma_error_bound (src/filter/splits.hpp). `Simple` (sums below 2^21, integral delta):
///    the scale, delta and the rounding half to even in one FMA.
/// Block and thread mapping: the channels are staged as planes, so an output tile is 16 pixels of
/// one channel and its horizontal MMAs read 16 + 2R values, not 16 + 2RC interleaved ones. A block
/// of W warps owns 16 P W pixels of a row (P = 4 pixel tiles a warp for one channel, 2 from
/// radius 9, 1 for three or four channels; warp w's tiles are its P pixel tiles x C channels) and
/// walks a strip of rows 16 at a time. Per step the threads stage the next 16 input rows (the
/// tile and its halo, border rule applied) as FP16 planes in one of two shared buffers, loaded one
/// step ahead into registers (16 pixels, C vectors of 16 bytes, a slot); each warp then forms the
/// row sums of those 16 rows for its tiles, and with the older steps' row sums (the previous
/// step's kept in registers up to radius 8; from radius 9 two steps' in the warp's shared memory,
/// each lane its own words) the 16 output rows of the oldest, which it interleaves back into its
/// rows in shared memory (a lane's own results are 2 pixels x C channels of a row) and stores as
/// 16-byte vectors.
#include "common.cuh"
#include "fast_pack.cuh"
#include "mma.cuh"
#include "tensor_separable_mma_fragments.cuh"
#include "tensor_separable_mma_layout.cuh"
#include "tensor_staging.cuh"

#include <cuda_fp16.h>

#include <cstdint>

namespace cuconv::kernels {

/// Block (bx, by) filters pixels [bx * 16PW, (bx + 1) * 16PW) of rows [s0, s0 + strip_rows),
/// s0 = by * strip_rows, by + gridDim.y, ... (strip_rows a multiple of 16). Square centred
/// (2R+1)^2 filters, 8-bit in and out, C interleaved channels; `vector_aligned` and `vector_store`:
/// source and destination rows 16-byte aligned.
template <int C, int R, int Warps, bool Simple>
__global__ void __launch_bounds__(32 * Warps, 16 / Warps)
    tensor_separable_mma_kernel(PlaneView<const std::uint8_t> src, PlaneView<std::uint8_t> dst, ConvParams p,
                                TensorSeparableMmaTaps<2 * R + 1> taps, bool vector_aligned, bool vector_store,
                                int strip_rows, float rounding_delta) {
  using namespace tensor_detail;
  using namespace tensor_mma_detail;
  constexpr int K = 2 * R + 1;
  constexpr int kThreads = 32 * Warps;
  constexpr int kPixelTiles = tensor_mma_pixel_tiles(C, R);
  constexpr int kTiles = kPixelTiles * C;  // tile i: pixel tile i / C, channel i % C
  constexpr int kTilePixels = tensor_mma_tile_pixels(Warps, C, R);
  constexpr int kVSteps = tensor_mma_vertical_steps(R);
  constexpr bool kSharedHistory = tensor_mma_shared_history(R);
  constexpr int kHistorySlots = kVSteps - 1;  // history slots: step j's row sums in slot j % (S - 1)
  constexpr int kHalo = tensor_mma_halo(R);
  constexpr int kTileHalo = tensor_mma_tile_halo(R);
  constexpr int kOffset = kHalo - kTileHalo;  // staged pixel of tile 0's first k-step
  constexpr int kKSteps = tensor_mma_ksteps(R);
  constexpr int kStage = tensor_mma_stage_stride(Warps, C, R);
  constexpr int kStagedPixels = kStage - 8;
  constexpr int kPlane = kTensorMmaRows * kStage;  // halves of one channel's 16 staged rows
  constexpr int kGroups = kStagedPixels / 16;      // 16-pixel slots of a staged row
  constexpr int kSlots = (kTensorMmaRows * kGroups + kThreads - 1) / kThreads;  // slots a thread

  extern __shared__ __align__(16) unsigned char tensor_mma_shared[];
  auto* staged = reinterpret_cast<unsigned short*>(tensor_mma_shared);
  auto* column_source = reinterpret_cast<int*>(staged + 2 * C * kPlane);
  constexpr int kOutStride = tensor_mma_out_stride(C, R);
  constexpr int kHistory = tensor_mma_history_bytes(C, R);
  auto* warp_shared = reinterpret_cast<std::uint8_t*>(column_source + kStagedPixels * C) +
                      (static_cast<int>(threadIdx.x) >> 5) * (kTensorMmaRows * kOutStride + kHistory);
  auto* out_tile = warp_shared;
  // With kSharedHistory: history[slot][tile][part][lane], slot m % (S - 1) holding step m - S + 1's
  // row sums until step m's replace them; each lane reads and writes only its own 16-byte words.
  auto* history = reinterpret_cast<uint4*>(warp_shared + kTensorMmaRows * kOutStride);

  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int row_elems = src.width * C;
  const int x0 = static_cast<int>(blockIdx.x) * kTilePixels;

  // Where staged byte sc (of C interleaved channels) reads in a row: element (x0 - Halo) C + sc
  // through the border rule (-1: the constant border value). Used at the row's ends only.
  build_column_map<C>(column_source, kStagedPixels * C, (x0 - kHalo) * C, src.width, p.border);

  // Toeplitz fragments, built once from a copy of the taps in shared memory (the second staging
  // buffer, unused until the second step): indexed per lane, kernel parameters would serialize.
  // Each fragment register is XORed with its own zero word from shared memory: registers the
  // compiler could prove equal (the Toeplitz structure repeats entries) or zero would otherwise be
  // rebuilt, with register moves, before every MMA that reads them.
  // Horizontal, k-step ks: entry (o, k) is tap j where k + 16 ks = o + j - R + TileHalo.
  // Vertical, k-step kv: entry (m, k) is tap 16 kv + k - m.
  auto* tap_bits = staged + C * kPlane;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < 4 * K; ++k) tap_bits[k] = taps.bits[k];  // compile-time indices: no local copy of taps
  }
  auto* opaque_zero = reinterpret_cast<unsigned*>(tap_bits + (4 * K + 1) / 2 * 2);
  for (int k = static_cast<int>(threadIdx.x); k < 8 * (kKSteps + kVSteps); k += kThreads) opaque_zero[k] = 0u;
  __syncthreads();
  unsigned h_hi[kKSteps][4];
  unsigned h_lo[kKSteps][4];
  unsigned v_hi[kVSteps][4];
  unsigned v_lo[kVSteps][4];
  const auto horizontal_entry = [&](int ks, int part) {
    return [=](int o, int k) -> unsigned {
      const int j = k + 16 * ks - o - kTileHalo + R;
      return (j < 0 || j >= K) ? 0u : tap_bits[part * K + j];
    };
  };
  const auto vertical_entry = [&](int kv, int part) {
    return [=](int m, int k) -> unsigned {
      const int j = 16 * kv + k - m;
      return (j < 0 || j >= K) ? 0u : tap_bits[(2 + part) * K + j];
    };
  };
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
    a_fragment(horizontal_entry(ks, 0), lane, opaque_zero + 8 * ks, h_hi[ks]);
    a_fragment(horizontal_entry(ks, 1), lane, opaque_zero + 8 * ks + 4, h_lo[ks]);
  }
#pragma unroll
  for (int kv = 0; kv < kVSteps; ++kv) {
    a_fragment(vertical_entry(kv, 0), lane, opaque_zero + 8 * kKSteps + 8 * kv, v_hi[kv]);
    a_fragment(vertical_entry(kv, 1), lane, opaque_zero + 8 * kKSteps + 8 * kv + 4, v_lo[kv]);
  }
  const unsigned border_byte = static_cast<unsigned>(p.border_value);
  __syncthreads();  // column_source complete, the tap copy read

  // Slot s: 16 pixels (C vectors of 16 bytes) of staged row step_row, from pixel x0 - Halo +
  // 16 step_group, into registers: vector loads inside the row, the column map at its ends, the
  // border value for rows outside a constant border.
  uint4 pending[kSlots][C];
  int step_row[kSlots];
  int step_group[kSlots];
  bool slot_whole[kSlots];  // the slot's bytes lie inside the row: vector loads
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int idx = static_cast<int>(threadIdx.x) + s * kThreads;
    step_row[s] = idx / kGroups;
    step_group[s] = idx - step_row[s] * kGroups;
    const int e0 = (x0 - kHalo + 16 * step_group[s]) * C;
    slot_whole[s] = vector_aligned && e0 >= 0 && e0 + 16 * C <= row_elems;
  }
  const auto in_step = [&](int s) { return static_cast<int>(threadIdx.x) + s * kThreads < kTensorMmaRows * kGroups; };
  const auto load_rows = [&](int first_row) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (!in_step(s)) break;
      int y = first_row + step_row[s];
      if (static_cast<unsigned>(y) >= static_cast<unsigned>(src.height))
        y = interpolate_border(y, src.height, p.border);
#pragma unroll
      for (int k = 0; k < C; ++k) {
        if (y < 0) {
          const unsigned b = border_byte * 0x01010101u;
          pending[s][k] = make_uint4(b, b, b, b);
        } else if (slot_whole[s]) {
          pending[s][k] = __ldg(reinterpret_cast<const uint4*>(src.row(y) + (x0 - kHalo + 16 * step_group[s]) * C) + k);
        } else {
          pending[s][k] = gather_columns(src.row(y), column_source, C * step_group[s] + k, border_byte);
        }
      }
    }
  };
  const auto store_rows = [&](unsigned short* buffer) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (!in_step(s)) break;
      store_planes_as_halves<C>(buffer + step_row[s] * kStage + 16 * step_group[s], kPlane, pending[s]);
    }
  };

  // ldmatrix addresses: lane l gives row l % 8 of matrix l / 8 (rows 0-7 / 8-15, pixels +0 / +8).
  const int a_row = (lane & 7) + (lane >> 4) * 8;
  const int a_col = ((lane >> 3) & 1) * 8;
  const int tile_first = kOffset + 16 * kPixelTiles * warp;  // staged pixel of this warp's first tile

  for (int s0 = static_cast<int>(blockIdx.y) * strip_rows; s0 < src.height;
       s0 += static_cast<int>(gridDim.y) * strip_rows) {
    const int out_steps = (min(strip_rows, src.height - s0) + kTensorMmaRows - 1) / kTensorMmaRows;
    const int first_row = s0 - p.anchor_y;  // input row of step 0, row 0
    const int rows_end = min(src.height, s0 + strip_rows);
    // Up to radius 8: B fragments of the previous step's row sums, [tile][n-tile][k half]; from
    // radius 9 `keep` and `recall` store and load a tile's fragments in the warp's history.
    unsigned prev_hi[kSharedHistory ? 1 : kTiles][2][2];
    unsigned prev_lo[kSharedHistory ? 1 : kTiles][2][2];
    const auto keep = [&](int slot, int i, const unsigned(&hi)[2][2], const unsigned(&lo)[2][2]) {
      uint4* at = history + (slot * kTiles + i) * 64 + lane;
      at[0] = make_uint4(hi[0][0], hi[0][1], hi[1][0], hi[1][1]);
      at[32] = make_uint4(lo[0][0], lo[0][1], lo[1][0], lo[1][1]);
    };
    const auto recall = [&](int slot, int i, unsigned(&hi)[2][2], unsigned(&lo)[2][2]) {
      const uint4* at = history + (slot * kTiles + i) * 64 + lane;
      const uint4 h = at[0];
      const uint4 l = at[32];
      hi[0][0] = h.x;
      hi[0][1] = h.y;
      hi[1][0] = h.z;
      hi[1][1] = h.w;
      lo[0][0] = l.x;
      lo[0][1] = l.y;
      lo[1][0] = l.z;
      lo[1][1] = l.w;
    };
    load_rows(first_row);
    const int last_step = out_steps + kVSteps - 2;  // input steps 0 .. last_step
    for (int m = 0; m <= last_step; ++m) {
      // 1. Step m's input rows into buffer m & 1, step m + 1's loads under way. The barrier also
      // orders step m - 1's reads of the other buffer before anyone writes it in step m + 1.
      unsigned short* buffer = staged + (m & 1) * C * kPlane;
      store_rows(buffer);
      if (m < last_step) load_rows(first_row + kTensorMmaRows * (m + 1));
      __syncthreads();

      // 2. Row sums of the step's 16 rows for tile i, R^T = T^T X^T in two n-tiles of 8 rows, as
      // B fragments of the vertical pass: n-tile nt (columns 8 nt + g) takes C elements 2 nt,
      // 2 nt + 1 of both row n-tiles.
      const auto row_sums = [&](int i, unsigned(&hi)[2][2], unsigned(&lo)[2][2]) {
        float acc_hi[2][4] = {};
        float acc_lo[2][4] = {};
        const unsigned short* base = buffer + (i % C) * kPlane + a_row * kStage + tile_first + 16 * (i / C) + a_col;
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          unsigned x[4];
          ldmatrix_x4(x, base + 16 * ks);
          const unsigned rows_low[2] = {x[0], x[1]};   // image rows 0-7
          const unsigned rows_high[2] = {x[2], x[3]};  // image rows 8-15
          mma_f16_f32(acc_hi[0], h_hi[ks], rows_low);
          mma_f16_f32(acc_lo[0], h_lo[ks], rows_low);
          mma_f16_f32(acc_hi[1], h_hi[ks], rows_high);
          mma_f16_f32(acc_lo[1], h_lo[ks], rows_high);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            split_half2(acc_hi[half][2 * nt] + acc_lo[half][2 * nt],
                        acc_hi[half][2 * nt + 1] + acc_lo[half][2 * nt + 1], hi[nt][half], lo[nt][half]);
          }
        }
      };
      if (m < kVSteps - 1) {
#pragma unroll
        for (int i = 0; i < kTiles; ++i) {
          if constexpr (!kSharedHistory) {
            row_sums(i, prev_hi[i], prev_lo[i]);
          } else {
            unsigned hi[2][2];
            unsigned lo[2][2];
            row_sums(i, hi, lo);
            keep(m % kHistorySlots, i, hi, lo);
          }
        }
        continue;
      }
      // 3. Per tile, the row sums of step m and the output rows of step m - S + 1 from those of
      // steps m - S + 1 .. m: straight-line code across the tiles, so one tile's MMAs overlap another's.
      // word[i][nt]: tile i's bytes of pixels 8 nt + 2t, + 1 in rows g and g + 8.
      unsigned word[kTiles][2];
#pragma unroll
      for (int i = 0; i < kTiles; ++i) {
        unsigned cur_hi[2][2];
        unsigned cur_lo[2][2];
        row_sums(i, cur_hi, cur_lo);
        // The older steps' row sums: old[0] from step m - kVSteps + 1, old[1] (radius 9 and up) from m - 1.
        unsigned old_hi[kVSteps - 1][2][2];
        unsigned old_lo[kVSteps - 1][2][2];
        if constexpr (!kSharedHistory) {
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              old_hi[0][nt][half] = prev_hi[i][nt][half];
              old_lo[0][nt][half] = prev_lo[i][nt][half];
            }
        } else {
#pragma unroll
          for (int k = 0; k < kHistorySlots; ++k)  // step m - S + 1 + k
            recall((m + k) % kHistorySlots, i, old_hi[k], old_lo[k]);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          // Each older step's high x high products on their own accumulator (C = 0); the cross
          // products first on `far`, whose last MMA, the current step's high x high, then starts
          // from a C far below its products.
          float near[4] = {};
          float mid[4] = {};
          float far[4] = {};
          mma_f16_f32(near, v_hi[0], old_hi[0][nt]);
          if constexpr (kVSteps == 3) mma_f16_f32(mid, v_hi[1], old_hi[1][nt]);
#pragma unroll
          for (int s = 0; s < kVSteps - 1; ++s) {
            mma_f16_f32(far, v_hi[s], old_lo[s][nt]);
            mma_f16_f32(far, v_lo[s], old_hi[s][nt]);
          }
          mma_f16_f32(far, v_hi[kVSteps - 1], cur_lo[nt]);
          mma_f16_f32(far, v_lo[kVSteps - 1], cur_hi[nt]);
          mma_f16_f32(far, v_hi[kVSteps - 1], cur_hi[nt]);
          float sum[4];
#pragma unroll
          for (int c = 0; c < 4; ++c) sum[c] = kVSteps == 2 ? near[c] + far[c] : (near[c] + mid[c]) + far[c];
          if constexpr (Simple) {
            // One rounding: delta + 1.5 * 2^23 is exact, so the FMA leaves the sum rounded half to even
            // in the low mantissa bits (|sum| < 2^22).
            int rounded[4];
#pragma unroll
            for (int c = 0; c < 4; ++c)
              rounded[c] = __float_as_int(fmaf(sum[c], taps.scale, rounding_delta)) - 0x4B400000;
            word[i][nt] = pack_sat_u8x4(rounded[0], rounded[1], rounded[2], rounded[3]);
          } else {
            float y[4];
#pragma unroll
            for (int c = 0; c < 4; ++c) y[c] = fmaf(sum[c], taps.scale, p.delta);
            word[i][nt] = round_pack_u8x4(true, y[0], y[1], y[2], y[3]);
          }
        }
        if constexpr (!kSharedHistory) {
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              prev_hi[i][nt][half] = cur_hi[nt][half];
              prev_lo[i][nt][half] = cur_lo[nt][half];
            }
        } else {
          keep(m % kHistorySlots, i, cur_hi, cur_lo);  // the slot of step m - S + 1, read above
        }
        // A pixel tile's channels complete: rows g and g + 8, pixels 8 nt + 2t, + 1, interleaved
        // into the warp's output rows.
        if (i % C == C - 1) {
          const int pt = i / C;
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            unsigned channels[C];
#pragma unroll
            for (int c = 0; c < C; ++c) channels[c] = word[pt * C + c][nt];
            auto* at = out_tile + g * kOutStride + (16 * pt + 8 * nt + 2 * t) * C;
            store_interleaved<C>(channels, at, at + 8 * kOutStride);
          }
        }
      }
      // 4. The warp's 16 output rows from shared memory to the image, 16 bytes a lane and store.
      {
        __syncwarp();
        const int first_out = s0 + kTensorMmaRows * (m - kVSteps + 1);
        const int e_warp = (x0 + 16 * kPixelTiles * warp) * C;
        constexpr int kRowVectors = kPixelTiles * C;  // 16-byte vectors of a row of the warp's tile
#pragma unroll
        for (int v = lane; v < kTensorMmaRows * kRowVectors; v += 32) {
          const int r = v / kRowVectors;
          const int e = e_warp + 16 * (v % kRowVectors);
          const int row = first_out + r;
          if (row >= rows_end || e >= row_elems) continue;
          const uint4 bytes = *reinterpret_cast<const uint4*>(out_tile + r * kOutStride + 16 * (v % kRowVectors));
          std::uint8_t* out = dst.row(row) + e;
          if (vector_store && e + 16 <= row_elems) {
            __stcs(reinterpret_cast<uint4*>(out), bytes);
          } else {
            const unsigned words[4] = {bytes.x, bytes.y, bytes.z, bytes.w};
            for (int c = 0; c < 16 && e + c < row_elems; ++c)
              out[c] = static_cast<std::uint8_t>(words[c / 4] >> (8 * (c % 4)));
          }
        }
        __syncwarp();
      }
    }
  }
}

}  // namespace cuconv::kernels
