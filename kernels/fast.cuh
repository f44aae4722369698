// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast.cuh
/// `fast`: our direct convolution, built for memory bandwidth at small filters and for FMA
/// throughput at large ones. This file holds the walk (fast_kernel); its parts live beside it:
/// kernels/fast_rows.cuh (loading rows, cp.async staging, border positions),
/// kernels/fast_pack.cuh (packed words, rounding, stores), kernels/fast_taps.cuh (what a row adds,
/// dense and separable), kernels/fast_generic.cuh (any other filter), and the host rules (strip
/// length, sum range) in src/gpu/launch/fast_rules.cuh.
///  - Interleaved pixels (RGB, RGBA) are filtered in place: a row of W pixels x C channels is a
///    row of W*C elements, and tap j of element e reads element e + (j - anchor) * C. No
///    split/merge round trip.
///  - Each thread owns kVec adjacent elements of a row (one 16-byte load where possible) and
///    walks down a strip of rows. Every input row is read once into registers (its own chunk
///    plus halo elements of the neighbour chunks) and added into the kh partial output rows it
///    touches; the finished row leaves through one vector store. Vertical reuse lives in
///    registers. Horizontal reuse: for small filters the halo words pass between lanes by warp
///    shuffle (each thread loads only its own chunk); from 7x7 on each warp stages its rows in
///    shared memory with cp.async several rows ahead (fast_stages_rows).
///  - The weights are a kernel parameter (constant bank, compile-time offsets), so streams with
///    different filters never share state; the compiler feeds them to the FMAs through uniform
///    registers.
///  - Separable filters (rank 1) use the same walk: each row is first filtered horizontally
///    (kw FMAs per element), then added into the partial rows with one vertical weight each
///    (kernels/fast_taps.cuh has both row sums; the rest of the walk is shared).
/// Borders: the vector path serves chunks that lie inside the row; the others, and rows outside
/// the image, are read element by element through the border rule.
#include "fast_pack.cuh"
#include "fast_rows.cuh"
#include "fast_taps.cuh"

#include <cstring>
#include <type_traits>

namespace cuconv::kernels {

inline constexpr int kFastBlockX = 32;  ///< threads along a row (one warp)
inline constexpr int kFastBlockY = 4;   ///< warps per block, side by side along the row
inline constexpr int kFastThreads = kFastBlockX * kFastBlockY;

/// Elements per thread: 16 bytes of input where the accumulators (kh x kVec) still fit in
/// registers, narrower for wide filters.
template <class In, int Radius>
__host__ __device__ constexpr int fast_vector_elems() {
  constexpr int by_bytes = 16 / static_cast<int>(sizeof(In));  // 4 f32, 8 u16, 16 u8
  // Accumulators per filter row: 16 at 3x3 (one full 16-byte u8 load), 8 up to 9x9, 4 beyond
  // (bench/results/kernel-notes/fast.md, 'Elements per thread').
  constexpr int register_cap = Radius <= 1 ? 16 : Radius <= 4 ? 8 : 4;
  return by_bytes < register_cap ? by_bytes : register_cap;
}

/// Blocks an SM that the register allocation must leave room for (__launch_bounds__), where the
/// measured best occupancy sits on an allocation step: dense f32 5x5 at 56 registers (9 blocks)
/// and 8-bit 5x5 at 72 (7 blocks), which the allocator otherwise left for the next step when
/// unrelated code changed (bench/results/kernel-notes/fast.md, 'Registers at 5x5'). 0: no bound (nvcc then
/// leaves the directive out, and the allocation is the unbounded one).
template <class In, int Channels, int Radius, bool Separable>
__host__ __device__ constexpr int fast_min_blocks() {
  if constexpr (Radius == 1 && Channels == 3 && sizeof(In) == 1 && !Separable)
    return 6;
  else if constexpr (Radius != 2 || Channels != 1 || Separable)
    return 0;
  else if constexpr (sizeof(In) == 4)
    return 9;
  else if constexpr (sizeof(In) == 1)
    return 7;
  else
    return 0;
}

/// Thread (tx, ty) of block (bx, by) computes elements [e0, e0 + kVec) of the flattened row,
/// e0 = ((bx * 4 + ty) * 32 + tx) * kVec, for image rows [s0, s0 + strip_rows) with
/// s0 = by' * strip_rows, by' = by, by + gridDim.y, ... Tile of a block: 128 * kVec elements x
/// strip_rows rows (fast_strip_rows_for, src/gpu/launch/fast_rules.cuh). The four warps walk the same
/// rows side by side, so each row is read as one contiguous span of 128 * kVec elements (DRAM
/// pages stay open) rather than four spans far apart. A thread's window of a row is its own chunk
/// of kVec elements and kSideVectors chunks each side, read either
///  - straight into registers (small filters, kSideVectors = 1), two rows ahead: each lane loads
///    its own chunk, takes the halo words of its neighbours' chunks by shuffle, and lanes 0 and
///    31 load the halo words beyond the warp's span, or
///  - from shared memory (fast_stages_rows): each warp stages its rows (its 32 chunks plus
///    kSideVectors chunks each side; lane l copies chunk l, and chunk 32 + l when l < 2S) with
///    cp.async into a ring of kFastStages slots, kFastStages - 2 rows ahead. Warps stay
///    independent: one __syncwarp per row, no block barrier.
/// Chunks (and edge words) not wholly inside the row, and rows of a constant border, go element
/// by element through the border rule; rows outside the image are mapped by it first.
/// sum_range: what is known of every output sum's range (fast_sum_range): integer results round
/// without cvRound's out-of-range rule inside int's range, and 8-bit ones without a clamp when
/// the sums are small.
/// @tparam Channels interleaved channels (tap stride); @tparam Radius (2R+1)^2 centred filter.
template <class In, class Out, int Channels, int Radius, bool Separable>
__global__ void __launch_bounds__(kFastThreads, (fast_min_blocks<In, Channels, Radius, Separable>()))
    fast_kernel(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p,
                FilterTaps<Separable ? 2 * (2 * Radius + 1) : (2 * Radius + 1) * (2 * Radius + 1)> taps,
                bool keep_alpha, bool vector_aligned, int strip_rows, SumRange sum_range) {
  constexpr int K = 2 * Radius + 1;
  constexpr int kVec = fast_vector_elems<In, Radius>();
  constexpr int kHalo = Radius * Channels;                 // elements each side
  constexpr int kSideVectors = (kHalo + kVec - 1) / kVec;  // neighbour chunks each side
  constexpr int kWindow = (2 * kSideVectors + 1) * kVec;   // elements a thread reads per row
  constexpr int kFirstTap = kSideVectors * kVec - kHalo;   // window index of tap 0 of element 0
  constexpr int kChunks = 2 * kSideVectors + 1;            // chunks a thread reads per row
  constexpr bool kStaged = fast_stages_rows<Channels, Radius>();
  constexpr int kSlotChunks = kFastBlockX + 2 * kSideVectors;                     // chunks of one staged warp row
  constexpr int kAhead = kFastStages - 2;                                         // staged rows in flight
  constexpr bool kPacksU8 = std::is_same_v<Out, unsigned char> && kVec % 4 == 0;  // round_pack_u8x4
  // Input rows a step of the strip walk adds (process_row). Separable staged filters take two:
  // the partial rows' register moves per row halve, and so do registers and instructions
  // (bench/results/kernel-notes/fast.md, 'Two rows a step'). Dense filters keep one: their moves are K x kVec
  // a row against K^2 x kVec FFMAs.
  constexpr int kRowsPerStep = Separable && kStaged ? 2 : 1;

  // A row lives in registers in the input type, packed (8 u8 elements in two words; widened to
  // float only while they are used): element t of a chunk is element t % kPerWord of word
  // chunk.v[t / kPerWord].
  using Packing = PackedElements<In>;
  constexpr int kPerWord = Packing::kPerWord;
  static_assert(kVec % kPerWord == 0, "a chunk holds whole words");
  using Chunk = ElementVector<typename Packing::Word, kVec / kPerWord>;
  __shared__ Chunk staged[kStaged ? kFastBlockY : 1][kStaged ? kFastStages : 1][kStaged ? kSlotChunks : 1];

  const int lane = threadIdx.x;
  const int row_elems = src.width * Channels;
  const int warp_e0 = (blockIdx.x * kFastBlockY + threadIdx.y) * kFastBlockX * kVec;
  const int e0 = warp_e0 + lane * kVec;
  // Whole warps leave (their lanes share shuffles or barriers); lanes past the row end stay to
  // read halo chunks for their neighbours.
  if (warp_e0 >= row_elems) return;
  const bool has_output = e0 < row_elems;
  const bool full_store = vector_aligned && e0 + kVec <= row_elems;
  const int strips = div_up(src.height, strip_rows);

  // Direct: a row is this thread's own chunk plus, for lanes 0 and 31, the halo words beyond the
  // warp's span (left of lane 0, right of lane 31); the other halo words come from the neighbour
  // lanes' own chunks by shuffle in fetch_row. One load per thread and row instead of 2S + 1:
  // the neighbour loads hit L1, but their L1 wavefronts limited f32 3x3 (bench/results/kernel-notes/fast.md,
  // 'Halo by shuffle').
  static_assert(kStaged || kSideVectors == 1, "the direct path shuffles one neighbour chunk each side");
  // The taps read kHalo elements of each neighbour chunk: words [kLeftWord, kWords) of the left
  // one and [0, kEdgeWords) of the right one. Lane 0 loads the left words itself, lane 31 the
  // right ones (kEdgeWords words, not a whole chunk: fewer registers).
  constexpr int kWords = kVec / kPerWord;
  constexpr int kEdgeWords = (kHalo + kPerWord - 1) / kPerWord;
  constexpr int kLeftWord = kWords - kEdgeWords;
  using Word = typename Packing::Word;
  struct DirectRow {
    Chunk own;
    Word edge[kEdgeWords];
  };
  // Lane 0's left words are always read (the warp has an output); lane 31's right words only when
  // lane 31 has an output (on tiny images the border rule far past the row end is slow).
  const bool edge_lane = lane == 0 || (lane == kFastBlockX - 1 && has_output);
  const int edge_first = lane == 0 ? e0 - (kEdgeWords * kPerWord) : e0 + kVec;  // element of edge[0]
  // The taps read the last kHalo elements of lane 0's edge words and the first kHalo of lane 31's.
  const int edge_used_from = lane == 0 ? kEdgeWords * kPerWord - kHalo : 0;
  const int edge_used_to = lane == 0 ? kEdgeWords * kPerWord : kHalo;
  // Lanes more than one chunk past the row end read nothing: nobody uses their chunk (and on tiny
  // images the border rule far past the row cost 3-10x the kernel).
  const bool own_needed = e0 < row_elems + kVec;
  const bool own_inside = vector_aligned && e0 + kVec <= row_elems;
  // A lane whose chunk starts at or past the row end (rows of W * C elements that end inside a
  // warp's span) serves only its left neighbour's taps: it reads the first kHalo elements of its
  // chunk, like lane 31's right edge words, at positions found once. Through the per-row border
  // rule its warp ran several times slower than the others (bench/results/kernel-notes/fast.md, 'Border
  // positions'). Lane 0 is never past the end and lane 31 past it is no edge lane: one array
  // serves both.
  const bool own_past_end = own_needed && e0 >= row_elems;
  const bool edge_inside = vector_aligned && edge_first >= 0 && edge_first + kEdgeWords * kPerWord <= row_elems;
  // Element t of `words`, as fast_border_loads and fast_border_elements hand it on.
  const auto into_words = [](Word* words) {
    return [words](int t, In element) {
      words[t / kPerWord] = Packing::insert(t % kPerWord == 0 ? Word{} : words[t / kPerWord], t % kPerWord, element);
    };
  };
  // Where an edge lane's words are not wholly inside the row (at the row's ends), the positions
  // the border rule gives the elements its taps read: the same in every row, so found once here
  // (at most kHalo + 3 registers) rather than per row by calls while the warp waits
  // (bench/results/kernel-notes/fast.md, 'Border positions').
  constexpr int kEdgeElems = kEdgeWords * kPerWord;
  int edge_position[kStaged ? 1 : kEdgeElems]{};
  if constexpr (!kStaged) {
#pragma unroll
    for (int t = 0; t < kEdgeElems; ++t)
      edge_position[t] = ((edge_lane && !edge_inside) || own_past_end) && t >= edge_used_from && t < edge_used_to
                             ? fast_border_index<Channels>((own_past_end ? e0 : edge_first) + t, src.width, p.border)
                             : -2;
  }
  // The lane whose chunk crosses the row end (widths * C not a multiple of kVec) reads it element
  // by element: the ones inside the row where they are, the kHalo after the end (its own taps
  // read them) through the border rule, the rest not at all. Those positions are the same in
  // every row: found once, into shared memory (one lane a row has them: kVec registers each
  // thread would cost blocks an SM), rather than by kVec border-rule calls a row
  // (bench/results/kernel-notes/fast.md, 'Border positions').
  __shared__ int crossing_position[kStaged ? 1 : kVec];
  if (!kStaged && e0 < row_elems && e0 + kVec > row_elems) {
#pragma unroll
    for (int t = 0; t < kVec; ++t)
      crossing_position[t] = e0 + t < row_elems           ? e0 + t
                             : e0 + t < row_elems + kHalo ? fast_border_index<Channels>(e0 + t, src.width, p.border)
                                                          : -2;
  }
  // Rows shared by two strips (the first and last K - 1 of each) are read twice, by blocks that
  // usually run at the same time: the strip below reads them first (its warm-up), the strip above
  // at its end. The first reader asks L2 to keep them, the second to drop them; without the hint
  // they missed L2. Only f32 images, on the direct path: 8-bit sizes are bound by instruction
  // issue and paid for the hint's branch (bench/results/kernel-notes/fast.md, 'L2 hints').
  constexpr bool kHintsL2 = std::is_same_v<In, float>;
  const unsigned long long keep_in_l2 = l2_policy(RowReuse::again);
  const unsigned long long drop_from_l2 = l2_policy(RowReuse::done);
  auto read_own = [&](int yy, Chunk& chunk, RowReuse reuse) {
    if (own_inside && yy >= 0) {
      const Chunk* from = reinterpret_cast<const Chunk*>(src.row(yy) + e0);
      if (reuse == RowReuse::once) {
        chunk = load_chunk(from);
      } else {
        chunk = load_chunk(from, reuse == RowReuse::again ? keep_in_l2 : drop_from_l2);
      }
    } else {
      if (e0 + kVec > row_elems) {  // the crossing lane (read_own runs for lanes with e0 < row_elems)
        fast_border_loads<In, kVec>(
            src, yy, p, [&](int t) { return crossing_position[t]; }, into_words(chunk.v));
      } else {
        fast_border_elements<In, Channels, kVec>(src, e0, yy, p, into_words(chunk.v));
      }
    }
  };
  auto read_edge = [&](int yy, Word(&edge)[kEdgeWords]) {
    if (edge_inside && yy >= 0) {
      const Word* from = reinterpret_cast<const Word*>(src.row(yy) + edge_first);
#pragma unroll
      for (int w = 0; w < kEdgeWords; ++w) edge[w] = __ldg(from + w);
    } else {
      fast_border_loads<In, kEdgeElems>(
          src, yy, p, [&](int t) { return edge_position[t]; }, into_words(edge));
    }
  };
  auto load_row = [&](int y, DirectRow& row, RowReuse reuse) {
    // interpolate_border makes the same in-range test; the test stays spelled out here because
    // calling interpolate_border alone changes the generated code of every instance.
    const int yy =
        static_cast<unsigned>(y) < static_cast<unsigned>(src.height) ? y : interpolate_border(y, src.height, p.border);
    if (own_past_end) {
      fast_border_loads<In, kEdgeElems>(
          src, yy, p, [&](int t) { return edge_position[t]; }, into_words(row.own.v));
    } else if (own_needed) {
      read_own(yy, row.own, reuse);
    }
    if (edge_lane) read_edge(yy, row.edge);
  };

  // Staged: input row y (any y) into this warp's slot `slot`: lane l fills chunk l, and chunk
  // 32 + l when l < 2S. Chunks past the right halo of the last lane with an output are not read
  // and are left alone (on tiny images their border-rule fill cost 10x the kernel).
  Chunk(&ring)[kStaged ? kFastStages : 1][kStaged ? kSlotChunks : 1] = staged[kStaged ? threadIdx.y : 0];
  const int slot_start = warp_e0 - kSideVectors * kVec;                        // element of a slot's chunk 0
  constexpr int kStagePasses = (kSlotChunks + kFastBlockX - 1) / kFastBlockX;  // chunks per lane
  bool chunk_inside[kStagePasses];  // the chunk lies wholly inside the row (vector copy)
  bool chunk_needed[kStagePasses];  // some lane with an output reads it
#pragma unroll
  for (int i = 0; i < kStagePasses; ++i) {
    const int first = slot_start + (i * kFastBlockX + lane) * kVec;
    chunk_inside[i] = vector_aligned && first >= 0 && first + kVec <= row_elems;
    chunk_needed[i] = i * kFastBlockX + lane < kSlotChunks && first < row_elems + kSideVectors * kVec;
  }
  // The border rule's positions of the elements of this lane's chunks that are needed but not
  // wholly inside the row: the same in every row, so found once here (as edge_position on the
  // direct path). In shared memory, lane-minor: kVec registers a chunk would cost blocks an SM
  // (bench/results/kernel-notes/fast.md, 'Border positions').
  __shared__ int staged_position[kStaged ? kFastBlockY : 1][kStaged ? kStagePasses * kVec : 1][kFastBlockX];
  int(&chunk_position)[kStaged ? kStagePasses * kVec : 1][kFastBlockX] = staged_position[kStaged ? threadIdx.y : 0];
  if constexpr (kStaged) {
#pragma unroll
    for (int i = 0; i < kStagePasses; ++i) {
      if (!chunk_needed[i] || chunk_inside[i]) continue;
      const int first = slot_start + (i * kFastBlockX + lane) * kVec;
#pragma unroll
      for (int t = 0; t < kVec; ++t)
        chunk_position[i * kVec + t][lane] = fast_border_index<Channels>(first + t, src.width, p.border);
    }
  }
  auto stage_row = [&](int y, int slot) {
    const int yy = interpolate_border(y, src.height, p.border);
#pragma unroll
    for (int i = 0; i < kStagePasses; ++i) {
      const int c = i * kFastBlockX + lane;
      if (!chunk_needed[i]) break;
      const int first = slot_start + c * kVec;
      if (chunk_inside[i] && yy >= 0) {
        copy_async(&ring[slot][c], reinterpret_cast<const Chunk*>(src.row(yy) + first));
      } else {
        fast_border_stage<In, kVec>(
            src, yy, p, [&](int t) { return chunk_position[i * kVec + t][lane]; },
            reinterpret_cast<In*>(&ring[slot][c]));  // element stores: no Chunk temporary
      }
    }
  };

  for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
    const int s0 = strip * strip_rows;
    const int rows_out = min(strip_rows, src.height - s0);
    const int first_input_row = s0 - p.anchor_y;
    const int input_rows = rows_out + K - 1;
    const auto reuse_of_row = [&](int r) {  // strip row r: the direct path's L2 hint (read_own)
      if (!kHintsL2) return RowReuse::once;
      return r < K - 1 ? RowReuse::again : r >= input_rows - (K - 1) ? RowReuse::done : RowReuse::once;
    };

    // Direct: two rows in flight (`window` = row r, `ahead` = row r + 1 while row r + 2 loads);
    // a row is at most 32 bytes a thread. More rows in flight were slower
    // (bench/results/kernel-notes/fast.md, 'Rows in flight').
    DirectRow window{};  // defined words also for lanes that read nothing (own_needed)
    DirectRow ahead{};
    if constexpr (kStaged) {
      __syncwarp();  // every lane has read the previous strip's slots
#pragma unroll
      for (int a = 0; a < kAhead; ++a) {
        if (a < input_rows) stage_row(first_input_row + a, a);
        copy_async_commit();  // empty groups too: the group count stays one per row
      }
    } else {
      load_row(first_input_row, window, reuse_of_row(0));
      if (input_rows > 1) load_row(first_input_row + 1, ahead, reuse_of_row(1));
    }

    // Row r of the strip as float: in[t] is element e0 - kSideVectors * kVec + t of input row r.
    auto fetch_row = [&](int r, float(&in)[kWindow]) {
      if constexpr (kStaged) {
        if (r + kAhead < input_rows) stage_row(first_input_row + r + kAhead, (r + kAhead) % kFastStages);
        copy_async_commit();
        copy_async_wait<kAhead>();  // row r's copies of this lane have landed,
        __syncwarp();               // and every lane's (also: slot r - 1 is read by all)
        const Chunk* slot = &ring[r % kFastStages][lane];
#pragma unroll
        for (int v = 0; v < kChunks; ++v) {
          const Chunk chunk = slot[v];
#pragma unroll
          for (int t = 0; t < kVec; ++t) in[v * kVec + t] = Packing::widen(chunk.v[t / kPerWord], t % kPerWord);
        }
      } else {
        // Halo words from the neighbour lanes (lanes 0 and 31: their edge words).
        constexpr unsigned kWarp = 0xffffffffu;
        Chunk left, right;
#pragma unroll
        for (int w = kLeftWord; w < kWords; ++w) {
          const auto from_left = __shfl_up_sync(kWarp, window.own.v[w], 1);
          left.v[w] = lane == 0 ? window.edge[w - kLeftWord] : from_left;
        }
#pragma unroll
        for (int w = 0; w < kEdgeWords; ++w) {
          const auto from_right = __shfl_down_sync(kWarp, window.own.v[w], 1);
          right.v[w] = lane == kFastBlockX - 1 ? window.edge[w] : from_right;
        }
#pragma unroll
        for (int t = kFirstTap; t < kVec; ++t) in[t] = Packing::widen(left.v[t / kPerWord], t % kPerWord);
#pragma unroll
        for (int t = 0; t < kVec; ++t) in[kVec + t] = Packing::widen(window.own.v[t / kPerWord], t % kPerWord);
#pragma unroll
        for (int t = 0; t < kHalo; ++t) in[2 * kVec + t] = Packing::widen(right.v[t / kPerWord], t % kPerWord);
        window = ahead;
        if (r + 2 < input_rows) load_row(first_input_row + r + 2, ahead, reuse_of_row(r + 2));
      }
    };

    // partial[q][k]: output row (r0 - (K - 1) + q) before the step's first input row r0 is
    // added; the step's row r0 + Phase completes partial[Phase]. After a step the partial rows
    // shift down kRowsPerStep registers ((K - 1) x kVec moves a step).
    float partial[K + kRowsPerStep - 1][kVec];
#pragma unroll
    for (int q = 0; q < K + kRowsPerStep - 1; ++q)
#pragma unroll
      for (int k = 0; k < kVec; ++k) partial[q][k] = p.delta;

    // Row r = r0 + Phase of the strip: adds into partial[Phase .. Phase + K - 1] and writes
    // partial[Phase], output row r - (K - 1). The loop stays rolled: a ring unrolled by K (one
    // copy of the row body per phase, no moves) overflowed the instruction cache
    // (bench/results/kernel-notes/fast.md, 'Rolled walk').
    auto process_row = [&](int r, auto phase) {
      constexpr int Phase = decltype(phase)::value;
      float in[kWindow];
      fetch_row(r, in);
      if constexpr (Separable) {
        fast_add_row_separable<K, Channels, kFirstTap>(taps, in, &partial[Phase]);
      } else {
        fast_add_row_dense<K, Channels, kFirstTap>(taps, in, &partial[Phase]);
      }
      const float(&finished)[kVec] = partial[Phase];

      const int out_row = r - (K - 1);
      if (out_row >= 0 && has_output) {
        const int y = s0 + out_row;
        Out* out = dst.row(y) + e0;
        ElementVector<Out, kVec> result;
        if (sum_range != SumRange::any && kPacksU8) {
          const bool clamp_low = sum_range != SumRange::small;
#pragma unroll
          for (int w = 0; w < kVec / 4; ++w) {
            const unsigned word = round_pack_u8x4(clamp_low, finished[4 * w], finished[4 * w + 1], finished[4 * w + 2],
                                                  finished[4 * w + 3]);
            memcpy(&result.v[4 * w], &word, 4);
          }
        } else if (sum_range != SumRange::any) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) result.v[k] = saturate_inside_int<Out>(finished[k]);
        } else {
#pragma unroll
          for (int k = 0; k < kVec; ++k) result.v[k] = saturate_from_float<Out>(finished[k]);
        }
        if (Channels == 4 && keep_alpha) {  // alpha passes through, converted to the output type
          const In* centre = src.row(y) + e0;
#pragma unroll
          for (int k = 0; k < kVec; ++k)
            if ((e0 + k) % 4 == 3 && e0 + k < row_elems)
              result.v[k] = saturate_from_float<Out>(static_cast<float>(centre[k]));
        }
        if (full_store) {
          store_vector(out, result);
        } else {
#pragma unroll
          for (int k = 0; k < kVec; ++k)
            if (e0 + k < row_elems) out[k] = result.v[k];
        }
      }
    };

#pragma unroll 1
    for (int r0 = 0; r0 < input_rows; r0 += kRowsPerStep) {
      process_row(r0, std::integral_constant<int, 0>{});
      if constexpr (kRowsPerStep == 2) {
        if (r0 + 1 < input_rows) process_row(r0 + 1, std::integral_constant<int, 1>{});
      }
#pragma unroll
      for (int q = 0; q + 1 < K; ++q)
#pragma unroll
        for (int k = 0; k < kVec; ++k) partial[q][k] = partial[q + kRowsPerStep][k];
#pragma unroll
      for (int q = K - 1; q < K + kRowsPerStep - 1; ++q)
#pragma unroll
        for (int k = 0; k < kVec; ++k) partial[q][k] = p.delta;
    }
  }
}
}  // namespace cuconv::kernels
