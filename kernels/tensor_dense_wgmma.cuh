// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file tensor_dense_wgmma.cuh
/// `tensor` for dense one-channel 8-bit filters (kh, kw up to 17, any anchor) on Hopper's
/// warpgroup MMAs (wgmma, sm_90a), with the byte arithmetic of tensor_dense.cuh: the pixels stay
/// bytes, the weights are three signed base-256 digits, and each digit's sum over the filter
/// accumulates exactly in 32-bit integers (the same chains, joined by the same epilogue, so the
/// two kernels give the same bits).
///  - Formulation: output rows are M, 16 output columns and the three digits are N (48), 32 input
///    columns are K. Per filter row i, A is the staged image shifted down i rows and B the
///    Toeplitz matrix B[k][16 d + o] = digit d of w[i][k - o]; both are read by the tensor cores
///    straight from shared memory through descriptors, so no operand passes through registers.
///  - Layout: the staged rows are kept as column slabs of 16 bytes (slab s holds bytes 16 s ..
///    16 s + 15 of every staged row, rows 16 bytes apart), so any 8 consecutive rows of a slab are
///    one contiguous 128-byte core matrix: shifting A by a filter row is adding 16 bytes to its
///    start address. B is stored the same way (n rows of 16 bytes, two K slabs).
/// Block and thread mapping: one warpgroup (4 warps) stores 128 output columns of every
/// gridDim.y-th tile of 64 rows. The 64 + kh - 1 staged rows of the next tile go into the second
/// of two slab buffers while this tile computes: inside the image by the tensor memory accelerator
/// (one 2-D box copy a slab, completion on an mbarrier), at the image's edges by the threads
/// (border rules). For each column block of 16 outputs the warpgroup issues kh wgmmas
/// (m64n48k32) and rounds the chains into an output tile in shared memory (warp w holds rows
/// 16 w .. 16 w + 15), stored with 16-byte stores.
#include "common.cuh"
#include "mma.cuh"
#include "tensor_dense.cuh"  // TensorDenseTaps, join_chains

#include <cuda.h>  // CUtensorMap

#include <cstdint>

namespace cuconv::kernels {

inline constexpr int kWgmmaThreads = 128;     ///< one warpgroup a block
inline constexpr int kWgmmaMaxSide = 17;      ///< 16 outputs and kw - 1 halo columns fill K = 32
inline constexpr int kWgmmaTileRows = 64;     ///< M of one wgmma
inline constexpr int kWgmmaColumnBlocks = 8;  ///< blocks of 16 outputs a tile (9 where anchor_x % 16 != 0)
inline constexpr int kWgmmaTileColumns = 16 * kWgmmaColumnBlocks;
inline constexpr int kWgmmaSlabs = kWgmmaColumnBlocks + 2;
inline constexpr int kWgmmaStageRows = kWgmmaTileRows + kWgmmaMaxSide - 1;
/// Bytes between slabs, a multiple of 128 (the copy engine's alignment).
inline constexpr int kWgmmaSlabBytes = kWgmmaStageRows * 16;
inline constexpr int kWgmmaBufferBytes = kWgmmaSlabs * kWgmmaSlabBytes;
inline constexpr int kWgmmaBBytes = 2 * 48 * 16;  ///< one filter row's B: two K slabs of 48 rows
/// The output tile: up to 9 column blocks at an offset of up to 16 bytes (15, and one more for odd
/// anchors), 16 bytes of padding.
inline constexpr int kWgmmaOutStride = kWgmmaTileColumns + 48;
static_assert(kWgmmaSlabBytes % 128 == 0 && kWgmmaBufferBytes % 128 == 0);

/// Rows of one slab copy: the tile's rows and kh - 1 halo rows.
__host__ __device__ constexpr int wgmma_staged_rows(int kh) { return kWgmmaTileRows + kh - 1; }

/// Whether a filter takes the kernel's `Shifted` form (9 column blocks, the block's outputs moved so
/// that its input columns start 16-byte aligned).
__host__ __device__ constexpr bool wgmma_shifted(int anchor_x) { return anchor_x % 16 != 0; }

/// Dynamic shared memory of one block: two slab buffers, B of every filter row, output tile,
/// column map, two mbarriers.
__host__ __device__ constexpr int wgmma_shared_bytes(int kh) {
  return 2 * kWgmmaBufferBytes + kh * kWgmmaBBytes + kWgmmaTileRows * kWgmmaOutStride + 16 * kWgmmaSlabs * 4 + 16;
}

namespace wgmma_detail {

/// join_chains' result with one conversion fewer: middle * 256 + low is exact in 32-bit integers
/// up to 256 taps (|middle| <= 255 * 128 * taps) and converts with the one rounding of
/// join_chains' inner FMA, so the two give the same bits.
__device__ __forceinline__ float join_low_chains(int high, int middle, int low) {
  return fmaf(__int2float_rn(high), 65536.0f, __int2float_rn(middle * 256 + low));
}

/// Shared-memory matrix descriptor without swizzling: start address, K-direction core-matrix
/// distance (leading byte offset) and M/N-direction distance of 8-row groups (stride byte offset).
__device__ __forceinline__ std::uint64_t descriptor(const void* smem, unsigned leading, unsigned stride) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  return static_cast<std::uint64_t>((address & 0x3FFFFu) >> 4) | (static_cast<std::uint64_t>(leading >> 4) << 16) |
         (static_cast<std::uint64_t>(stride >> 4) << 32);
}

/// acc (64 x 48, s32) = or += A (64 x 32 u8) * B (32 x 48 s8), both from shared memory. Warp w of
/// the warpgroup holds rows 16 w + g and 16 w + g + 8, columns 8 j + 2 t and 8 j + 2 t + 1 in
/// acc[4 j .. 4 j + 3] (the m16n8 accumulator layout per 8 columns).
__device__ __forceinline__ void wgmma_u8s8_n48(int (&acc)[24], std::uint64_t a, std::uint64_t b, bool accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n48k32.s32.u8.s8 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, %24, %25, p;\n}\n"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]), "+r"(acc[6]), "+r"(acc[7]),
        "+r"(acc[8]), "+r"(acc[9]), "+r"(acc[10]), "+r"(acc[11]), "+r"(acc[12]), "+r"(acc[13]), "+r"(acc[14]),
        "+r"(acc[15]), "+r"(acc[16]), "+r"(acc[17]), "+r"(acc[18]), "+r"(acc[19]), "+r"(acc[20]), "+r"(acc[21]),
        "+r"(acc[22]), "+r"(acc[23])
      : "l"(a), "l"(b), "r"(accumulate ? 1 : 0));
#else
  __trap();
#endif
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` committed groups are still running.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}
/// The mbarrier that counts a tile's copies: one arrival (the issuing thread) and the bytes.
__device__ __forceinline__ void barrier_init(std::uint64_t* bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(bar)))
               : "memory");
#endif
}
__device__ __forceinline__ void barrier_expect_bytes(std::uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(bar))),
               "r"(bytes)
               : "memory");
#endif
}
/// Waits until the barrier's phase with this parity has completed.
__device__ __forceinline__ void barrier_wait(std::uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred done;\nwait_again:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n}\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))),
      "r"(parity)
      : "memory");
#endif
}
/// A box of the 2-D tensor map at (column, row) into shared memory, completing on `bar`.
__device__ __forceinline__ void copy_box(void* smem, const CUtensorMap* map, int column, int row, std::uint64_t* bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(column), "r"(row),
      "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar)))
      : "memory");
#endif
}
/// Generic-proxy stores to shared memory made visible to the tensor cores' (async proxy) reads.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace wgmma_detail

/// The box copies read from 16-byte aligned columns, so a block's outputs start at x0 with x0 -
/// anchor_x a multiple of 16: x0 = 128 bx - 16 + anchor_x % 16 and 9 column blocks, whose outputs
/// cover the aligned columns [128 bx, 128 bx + 128) that the block stores (8 and x0 = 128 bx where
/// anchor_x % 16 == 0). Output x0 + c sits at byte c + anchor_x % 16 of the output tile (one more
/// where anchor_x is odd).
/// Block (bx, by) filters columns [bx * 128, bx * 128 + 128) of the 64-row tiles by, by +
/// gridDim.y, by + 2 gridDim.y, ... One channel, 8-bit
/// in and out; `source_map`: the input as a 2-D tensor map with boxes of 16 x
/// wgmma_staged_rows(Kh) bytes (its rows 16-byte aligned); `vector_aligned`: output rows
/// 16-byte aligned.
template <int Kh, bool Shifted>
__global__ void __launch_bounds__(kWgmmaThreads, 4)
    tensor_dense_wgmma_kernel(PlaneView<const std::uint8_t> src, PlaneView<std::uint8_t> dst, ConvParams p,
                              TensorDenseTaps taps, const __grid_constant__ CUtensorMap source_map,
                              bool vector_aligned) {
  using namespace wgmma_detail;
  using tensor_detail::round_to_byte;
  constexpr int kThreads = kWgmmaThreads;
  constexpr int kStagedColumns = 16 * kWgmmaSlabs;
  constexpr int kStagedRows = wgmma_staged_rows(Kh);

  extern __shared__ __align__(128) unsigned char wgmma_shared[];
  unsigned char* buffers = wgmma_shared;
  unsigned char* b_rows = buffers + 2 * kWgmmaBufferBytes;
  unsigned char* out_tile = b_rows + Kh * kWgmmaBBytes;
  auto* column_source = reinterpret_cast<int*>(out_tile + kWgmmaTileRows * kWgmmaOutStride);
  auto* bars = reinterpret_cast<std::uint64_t*>(column_source + kStagedColumns);

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int g = lane >> 2;
  const int t = lane & 3;
  constexpr int kBlocks = kWgmmaColumnBlocks + (Shifted ? 1 : 0);  // column blocks a tile
  constexpr int kLead = Shifted ? 16 : 0;                          // output tile bytes left of the stored columns
  const int shift = p.anchor_x % 16;                               // Shifted == (shift != 0)
  const int stored_first = static_cast<int>(blockIdx.x) * kWgmmaTileColumns;
  const int x0 = stored_first - kLead + shift;  // first output of column block 0
  const int first_pixel = x0 - p.anchor_x;      // input column of staged column 0, a multiple of 16
  constexpr int kSlabsUsed = kBlocks + 1;
  const bool inside_columns = first_pixel >= 0 && first_pixel + 16 * kSlabsUsed <= src.width;

  for (int j = tid; j < kStagedColumns; j += kThreads)
    column_source[j] = interpolate_border(first_pixel + j, src.width, p.border);
  if (tid == 0) {
    barrier_init(&bars[0]);
    barrier_init(&bars[1]);
  }
  // The digits into shared memory (the output tile's space, free until the first epilogue): B
  // reads them per byte, which from kernel parameters would serialize.
  constexpr int kDigitWords = (3 * kDenseMaxSide * kDenseMaxSide + 3) / 4;
  auto* digit_words = reinterpret_cast<unsigned*>(out_tile);
  for (int k = tid; k < kDigitWords; k += kThreads) digit_words[k] = reinterpret_cast<const unsigned*>(taps.digit)[k];
  fence_proxy_async();  // the barriers' initialization seen by the copy engine
  __syncthreads();
  // B of filter row i, K slab s, row n (digit n / 16, output n % 16), byte k: digit of w[i][16 s + k - n % 16].
  // Thread tid writes words tid, tid + 128 and tid + 256 of each row's B: their digit plane and
  // column window are the same in every filter row, so only the row's offset changes.
  constexpr int kBWords = kWgmmaBBytes / 4;
  static_assert(kBWords == 3 * kThreads);
  const auto* digits = reinterpret_cast<const signed char*>(out_tile);
#pragma unroll
  for (int m = 0; m < 3; ++m) {
    const int rest = tid + m * kThreads;
    const int s = rest / (48 * 4);
    const int n = (rest >> 2) % 48;
    const int k0 = 16 * s + 4 * (rest & 3) - (n & 15);
    const int plane = (n >> 4) * kDenseMaxSide * kDenseMaxSide + k0;
#pragma unroll
    for (int i = 0; i < Kh; ++i) {
      unsigned w = 0;
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (k0 + u >= 0 && k0 + u < p.kw)
          w |= static_cast<unsigned>(static_cast<unsigned char>(digits[plane + i * p.kw + u])) << (8 * u);
      reinterpret_cast<unsigned*>(b_rows)[i * kBWords + rest] = w;
    }
  }
  const unsigned border_bytes = static_cast<unsigned>(p.border_value) * 0x01010101u;
  __syncthreads();  // B built from the digits before the output tile's space is used

  // Staging of the tile at y0 into buffer `buffer`. Inside the image: thread 0 issues one box
  // copy a slab (returns true). At its edges item idx = kSlabsUsed r + s, slab s of staged row r, is
  // assembled by the threads: the 5 aligned words around its 16 bytes shifted into place, or
  // byte by byte through the column map at the row's ends and in rows of a constant border.
  const auto stage = [&](int y0, int buffer) {
    unsigned char* slabs = buffers + buffer * kWgmmaBufferBytes;
    const int first_row = y0 - p.anchor_y;
    if (inside_columns && first_row >= 0 && first_row + kStagedRows <= src.height) {
      if (tid == 0) {
        barrier_expect_bytes(&bars[buffer], kSlabsUsed * 16 * kStagedRows);
        for (int s = 0; s < kSlabsUsed; ++s)
          copy_box(slabs + s * kWgmmaSlabBytes, &source_map, first_pixel + 16 * s, first_row, &bars[buffer]);
      }
      return true;
    }
    for (int idx = tid; idx < kStagedRows * kSlabsUsed; idx += kThreads) {
      const int r = idx / kSlabsUsed;
      const int s = idx - r * kSlabsUsed;
      const int y = interpolate_border(first_row + r, src.height, p.border);
      const int e = first_pixel + 16 * s;
      unsigned w[4] = {border_bytes, border_bytes, border_bytes, border_bytes};
      if (y >= 0 && e >= 0 && ((e >> 2) + 5) * 4 <= src.width) {
        const auto* words = reinterpret_cast<const unsigned*>(src.row(y)) + (e >> 2);
        unsigned v[5];
#pragma unroll
        for (int k = 0; k < 5; ++k) v[k] = __ldg(words + k);
#pragma unroll
        for (int k = 0; k < 4; ++k) w[k] = __funnelshift_r(v[k], v[k + 1], 8 * (e & 3));
      } else if (y >= 0) {
        const std::uint8_t* row = src.row(y);
#pragma unroll
        for (int b = 0; b < 16; ++b) {
          const int from = column_source[16 * s + b];
          const unsigned byte = from >= 0 ? static_cast<unsigned>(__ldg(row + from)) : (border_bytes & 0xFFu);
          w[b / 4] = (w[b / 4] & ~(0xFFu << (8 * (b % 4)))) | (byte << (8 * (b % 4)));
        }
      }
      *reinterpret_cast<uint4*>(slabs + s * kWgmmaSlabBytes + 16 * r) = make_uint4(w[0], w[1], w[2], w[3]);
    }
    return false;
  };
  // This block's tiles start at rows 64 by, 64 (by + gridDim.y), ...
  const int tile_step = static_cast<int>(gridDim.y) * kWgmmaTileRows;

  // Up to 256 taps (Kh <= 15) the middle and low chains join exactly in 32-bit integers.
  constexpr bool kIntegerJoin = Kh * kWgmmaMaxSide <= 256;
  const std::uint64_t b_base = descriptor(b_rows, kWgmmaBBytes / 2, 128);
  // An odd shift would put output pairs across 2-byte words: the tile then holds the outputs one
  // byte to the right, and the stores to global memory shift them back.
  const int odd = shift & 1;
  unsigned char* out_row =
      out_tile + (16 * warp + g) * kWgmmaOutStride + shift + odd + 2 * t;  // this thread's first output

  int y0 = static_cast<int>(blockIdx.y) * kWgmmaTileRows;
  if (y0 >= src.height) return;
  bool copied = stage(y0, 0);
  unsigned parity = 0;  // bit b: parity of buffer b's next barrier phase
  for (int buffer = 0; y0 >= 0; buffer ^= 1) {
    const int y_next = y0 + tile_step < src.height ? y0 + tile_step : -1;
    // 1. The next tile into the other buffer (its wgmmas finished before the last barrier); this
    //    tile's copies waited for, the threads' stores fenced for the tensor cores.
    const bool next_copied = y_next >= 0 && stage(y_next, buffer ^ 1);
    if (copied) {
      barrier_wait(&bars[buffer], (parity >> buffer) & 1u);
      parity ^= 1u << buffer;
    }
    fence_proxy_async();
    __syncthreads();  // this tile's slabs complete; the previous output tile stored

    // 2. Each column block: kh wgmmas into one of two accumulator sets, issued before the
    //    previous block's chains are rounded into the output tile (the tensor cores work while
    //    the warps round). Descriptors are the buffer's and B's plus constant offsets (16-byte units).
    const std::uint64_t a_base = descriptor(buffers + buffer * kWgmmaBufferBytes, kWgmmaSlabBytes, 128);
    int acc[2][24];
    const auto issue = [&](int j, int(&d)[24]) {
      wgmma_fence();
#pragma unroll
      for (int i = 0; i < Kh; ++i)
        wgmma_u8s8_n48(d, a_base + static_cast<unsigned>((j * kWgmmaSlabBytes + 16 * i) >> 4),
                       b_base + static_cast<unsigned>((i * kWgmmaBBytes) >> 4), i != 0);
      wgmma_commit();
    };
    // Outputs 8 h + 2 t + u (u = 0, 1) of rows 16 warp + g + 8 q, whose digit c chain is
    // d[4 (2 c + h) + 2 q + u], rounded into the output tile as 2-byte pairs.
    const auto round_pairs = [&](int j, int h, const int(&d)[24]) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        unsigned v[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int k = 4 * h + 2 * q + u;
          const float sum =
              kIntegerJoin ? join_low_chains(d[16 + k], d[8 + k], d[k]) : join_chains(d[16 + k], d[8 + k], d[k]);
          v[u] = round_to_byte(fmaf(sum, taps.scale, p.delta));
        }
        *reinterpret_cast<unsigned short*>(out_row + 8 * q * kWgmmaOutStride + 16 * j + 8 * h) =
            static_cast<unsigned short>(__byte_perm(v[0], v[1], 0x0040));
      }
    };
    issue(0, acc[0]);
#pragma unroll
    for (int j = 0; j < kBlocks; ++j) {
      if (j + 1 < kBlocks) {
        issue(j + 1, acc[(j + 1) & 1]);
        wgmma_wait<1>();
      } else {
        wgmma_wait<0>();
      }
      round_pairs(j, 0, acc[j & 1]);
      round_pairs(j, 1, acc[j & 1]);
    }
    __syncthreads();  // output tile complete; this buffer's wgmmas done

    // 3. The output tile to global memory, 16 bytes a thread and step: thread tid takes vector
    //    column tid % 8 of rows tid / 8 + 16 m; tiles at the image's right or lower edge check each vector.
    constexpr int kVectorsPerRow = kWgmmaTileColumns / 16;
    constexpr int kRowsPerStep = kThreads / kVectorsPerRow;
    const int rows_left = min(kWgmmaTileRows, src.height - y0);
    const int e = stored_first + 16 * (tid % kVectorsPerRow);
    const int r0 = tid / kVectorsPerRow;
    const unsigned char* from = out_tile + r0 * kWgmmaOutStride + kLead + (e - stored_first);
    const auto vector_at = [&](const unsigned char* at) {  // the 16 stored bytes from `at` + odd
      const uint4 v = *reinterpret_cast<const uint4*>(at);
      if (!odd) return v;
      const unsigned next = *reinterpret_cast<const unsigned*>(at + 16);
      return make_uint4(__funnelshift_r(v.x, v.y, 8), __funnelshift_r(v.y, v.z, 8), __funnelshift_r(v.z, v.w, 8),
                        __funnelshift_r(v.w, next, 8));
    };
    if (vector_aligned && rows_left == kWgmmaTileRows && stored_first + kWgmmaTileColumns <= dst.width) {
      std::uint8_t* to = dst.row(y0 + r0) + e;
#pragma unroll
      for (int m = 0; m < kWgmmaTileRows / kRowsPerStep; ++m)
        __stcs(reinterpret_cast<uint4*>(to + static_cast<std::size_t>(m) * kRowsPerStep * dst.pitch_bytes),
               vector_at(from + m * kRowsPerStep * kWgmmaOutStride));
    } else {
      for (int r = r0; r < rows_left; r += kRowsPerStep) {
        if (e >= dst.width) break;
        const unsigned char* row_from = from + (r - r0) * kWgmmaOutStride;
        std::uint8_t* to = dst.row(y0 + r) + e;
        if (vector_aligned && e + 16 <= dst.width) {
          __stcs(reinterpret_cast<uint4*>(to), vector_at(row_from));
        } else {
          for (int k = 0; k < 16 && e + k < dst.width; ++k) to[k] = row_from[k + odd];
        }
      }
    }
    y0 = y_next;
    copied = next_copied;
  }
}

}  // namespace cuconv::kernels
