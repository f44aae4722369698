// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fast_rows.cuh
/// `fast` (kernels/fast.cuh): how a thread gets the input rows it filters. Aligned chunks of a
/// row through the read-only path with L2 hints (load_chunk), rows staged in shared memory by
/// cp.async (copy_async, fast_stages_rows), and the elements near the image border, whose
/// positions the border rule gives (fast_border_index, fast_border_loads, fast_border_elements,
/// fast_border_stage).
/// Why each is so: bench/results/kernel-notes/fast.md.
#include "common.cuh"

#include <cstring>

// Whether this pass compiles device code for an architecture before sm_80 (see read_only_chunk).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define CUCONV_BEFORE_SM80 1
#else
#define CUCONV_BEFORE_SM80 0
#endif

namespace cuconv::kernels {

/// Device code for sm_75 (the oldest architecture a build without a GPU targets) has no L2 hints
/// and no cp.async, both sm_80 PTX: there the loads below are plain read-only loads and the staging
/// copies are synchronous, which keeps every result bit for bit and costs only speed.

/// An aligned chunk through the read-only path without hints (the pre-sm_80 form of load_chunk).
template <class Chunk>
__device__ __forceinline__ Chunk read_only_chunk(const Chunk* address) {
  Chunk chunk;
  if constexpr (sizeof(Chunk) == 16) {
    const uint4 bits = __ldg(reinterpret_cast<const uint4*>(address));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else if constexpr (sizeof(Chunk) == 8) {
    const uint2 bits = __ldg(reinterpret_cast<const uint2*>(address));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else {
    chunk = *address;
  }
  return chunk;
}

/// How long L2 should keep the lines of a row the direct path loads (createpolicy operands).
enum class RowReuse {
  once,   ///< no hint: read by this strip alone
  again,  ///< evict_last: the strip above reads this row too, usually later
  done,   ///< evict_first: the strip below read this row already, usually earlier
};

/// A 64-bit L2 cache policy for ld.global's cache_hint: evict_last or evict_first on all lines.
/// Before sm_80 (no createpolicy) there is no policy to give: 0, which load_chunk ignores there.
__device__ __forceinline__ unsigned long long l2_policy(RowReuse reuse) {
#if CUCONV_BEFORE_SM80
  (void)reuse;
  return 0;
#else
  unsigned long long policy;
  if (reuse == RowReuse::again) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  } else {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  }
  return policy;
#endif
}

/// load_chunk with an L2 eviction policy (l2_policy) on the lines it reads; before sm_80 (no
/// cache hints, no L2 prefetch size) a plain read-only load.
template <class Chunk>
__device__ __forceinline__ Chunk load_chunk(const Chunk* address, unsigned long long policy) {
#if CUCONV_BEFORE_SM80
  (void)policy;
  return read_only_chunk(address);
#else
  Chunk chunk;
  if constexpr (sizeof(Chunk) == 16) {
    uint4 bits;
    asm volatile("ld.global.nc.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w)
                 : "l"(address), "l"(policy));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else if constexpr (sizeof(Chunk) == 8) {
    uint2 bits;
    asm volatile("ld.global.nc.L2::cache_hint.L2::256B.v2.u32 {%0, %1}, [%2], %3;"
                 : "=r"(bits.x), "=r"(bits.y)
                 : "l"(address), "l"(policy));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else {
    chunk = *address;
  }
  return chunk;
#endif
}

/// One aligned chunk of an input row. 8- and 16-byte chunks load through the read-only path with
/// a 256-byte L2 prefetch hint, since each row is read once, front to back (bench/results/kernel-notes/fast.md,
/// 'Loads').
template <class Chunk>
__device__ __forceinline__ Chunk load_chunk(const Chunk* address) {
#if CUCONV_BEFORE_SM80
  return read_only_chunk(address);
#else
  Chunk chunk;
  if constexpr (sizeof(Chunk) == 16) {
    uint4 bits;
    asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w)
                 : "l"(address));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else if constexpr (sizeof(Chunk) == 8) {
    uint2 bits;
    asm volatile("ld.global.nc.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(bits.x), "=r"(bits.y) : "l"(address));
    memcpy(&chunk, &bits, sizeof(Chunk));
  } else {
    chunk = *address;
  }
  return chunk;
#endif
}

/// Element e (any integer) of a row of `width` interleaved pixels, mapped into the row by the
/// border rule; -1: the constant border. Not inlined: an inline copy at every element that needs
/// it multiplied compile time and code size. It returns a position, not the element, so loads do
/// not wait in line behind calls. The lanes at a row's ends (edge words, the chunk that crosses
/// the row end or starts past it, staged chunks beyond the row) take positions found once; only
/// rows that are not 16-byte aligned call it per row (bench/results/kernel-notes/fast.md, 'Border positions').
template <int Channels>
__device__ __noinline__ int fast_border_index(int e, int width, BorderRule rule) {
  const int channel = ((e % Channels) + Channels) % Channels;
  const int x = (e - channel) / Channels;  // exact: e - channel is a multiple of C
  const int xx = interpolate_border(x, width, rule);
  return xx < 0 ? -1 : xx * Channels + channel;
}

/// Elements of image row yy (already mapped by the border rule; -1: constant) at positions
/// position(t), t in [0, N), handed to `take(t, element t)`: position -1 is the constant border,
/// -2 an element not read (In{} is handed). The loads do not wait for one another.
template <class In, int N, class Position, class Take>
__device__ __forceinline__ void fast_border_loads(const PlaneView<const In>& src, int yy, const ConvParams& p,
                                                  Position&& position, Take&& take) {
  const In constant = static_cast<In>(p.border_value);  // border_value is already saturated to In: exact
  if (yy < 0) {
#pragma unroll
    for (int t = 0; t < N; ++t) take(t, constant);
    return;
  }
  const In* row = src.row(yy);
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int at = position(t);
    take(t, at == -2 ? In{} : at < 0 ? constant : __ldg(row + at));
  }
}

/// Elements [first, first + N) of image row yy (already mapped by the border rule; -1: constant)
/// through the border rule, handed to `take(t, element t)`: the positions first
/// (fast_border_index), then the loads (fast_border_loads). Used per row only for rows that are
/// not 16-byte aligned (device views of odd pitch); the lanes at a row's ends take positions
/// found once (fast_kernel).
template <class In, int Channels, int N, class Take>
__device__ __forceinline__ void fast_border_elements(const PlaneView<const In>& src, int first, int yy,
                                                     const ConvParams& p, Take&& take) {
  // Four at a time, each element handed on as it arrives: holding all N positions and elements
  // at once costs registers (bench/results/kernel-notes/fast.md, 'Border positions').
  constexpr int kGroup = 4;
#pragma unroll
  for (int g = 0; g < N; g += kGroup) {
    constexpr int kCount = N < kGroup ? N : kGroup;
    int position[kCount];
#pragma unroll
    for (int t = 0; t < kCount; ++t)
      position[t] = g + t < N && yy >= 0 ? fast_border_index<Channels>(first + g + t, src.width, p.border) : -2;
    fast_border_loads<In, kCount>(
        src, yy, p, [&](int t) { return position[t]; },
        [&](int t, In element) {
          if (g + t < N) take(g + t, element);
        });
  }
}

/// Shared-memory slots per warp for rows staged by cp.async (fast_stages_rows): kFastStages - 2
/// rows are in flight while one is filtered, and one slot of slack lets a single __syncwarp per
/// row order the reads of a slot before its next fill. Eight was the best count measured
/// (bench/results/kernel-notes/fast.md, 'Staged rows').
inline constexpr int kFastStages = 8;
/// Whether fast_kernel stages its input rows in shared memory (else each thread loads its window
/// straight into registers, one or two rows ahead). Staging keeps six rows in flight without
/// holding registers and reads the halo from shared memory; it pays from 7x7 on and for wide
/// halos, while for memory-bound small filters the copy through shared memory costs more than it
/// hides. So: from radius 3, or from a halo of 6 elements each side (3- and 4-channel 5x5);
/// bench/results/kernel-notes/fast.md, 'Staged rows'.
template <int Channels, int Radius>
__host__ __device__ constexpr bool fast_stages_rows() {
  return Radius >= 3 || Radius * Channels >= 6;
}

/// cp.async of one 4-, 8- or 16-byte chunk from global to shared memory, with a 256-byte L2
/// prefetch (rows are read front to back); 16-byte chunks bypass L1 (the halo overlap is read
/// from the shared slot, not from L1).
template <class Chunk>
__device__ __forceinline__ void copy_async(Chunk* shared_destination, const Chunk* global_source) {
  static_assert(sizeof(Chunk) == 4 || sizeof(Chunk) == 8 || sizeof(Chunk) == 16, "cp.async copies 4, 8 or 16 bytes");
#if CUCONV_BEFORE_SM80
  *shared_destination = read_only_chunk(global_source);  // synchronous: commit and wait have nothing to do
#else
  const auto destination = static_cast<unsigned>(__cvta_generic_to_shared(shared_destination));
  if constexpr (sizeof(Chunk) == 16) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(destination), "l"(global_source)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], %2;" ::"r"(destination), "l"(global_source),
                 "n"(sizeof(Chunk))
                 : "memory");
  }
#endif
}

/// Closes this thread's group of cp.async copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() {
#if !CUCONV_BEFORE_SM80
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/// Waits until at most `Pending` of this thread's committed cp.async groups are still in flight.
template <int Pending>
__device__ __forceinline__ void copy_async_wait() {
#if !CUCONV_BEFORE_SM80
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
#endif
}

/// Elements of image row yy (already mapped by the border rule; -1: constant) at positions
/// position(t), t in [0, N), into a staged slot's `elements` (shared memory), as
/// fast_border_loads reads them. 4-byte elements go by cp.async one by one, landing with the row's
/// chunks, so the lanes at the image's ends do not wait for their loads every row
/// (bench/results/kernel-notes/fast.md, 'Border elements of staged rows'); narrower ones cannot
/// (cp.async copies at least 4 bytes) and are loaded.
template <class In, int N, class Position>
__device__ __forceinline__ void fast_border_stage(const PlaneView<const In>& src, int yy, const ConvParams& p,
                                                  Position&& position, In* elements) {
  if constexpr (sizeof(In) == 4) {
    const In constant = static_cast<In>(p.border_value);
#pragma unroll
    for (int t = 0; t < N; ++t) {
      const int at = position(t);
      if (yy >= 0 && at >= 0)
        copy_async(&elements[t], src.row(yy) + at);
      else
        elements[t] = yy >= 0 && at == -2 ? In{} : constant;
    }
  } else {
    fast_border_loads<In, N>(src, yy, p, position, [&](int t, In element) { elements[t] = element; });
  }
}

}  // namespace cuconv::kernels
