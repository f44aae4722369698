// SPDX-License-Identifier: Apache-2.0
#pragma once
// How many blocks of a kernel fit on the current device at once, and the grids of kernels whose
// blocks walk strips of rows.
#include "gpu/cuda_check.hpp"

#include <kernels/params.hpp>  // kMaxGridY

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>

namespace cuconv::gpu {

/// Blocks of `Kernel` (with `shared_bytes` of dynamic shared memory) that fit on the current device at once, queried
/// once per kernel and device (the device, attribute and occupancy queries otherwise ran before every launch, host time
/// between the kernels of a batch).
template <auto Kernel>
int resident_blocks(int threads_per_block, std::size_t shared_bytes = 0) {
  constexpr int kCachedDevices = 64;
  static std::array<std::atomic<int>, kCachedDevices> cached{};  // 0: not queried yet
  int device = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  if (device < kCachedDevices) {
    if (const int blocks = cached[device].load(std::memory_order_relaxed); blocks > 0) return blocks;
  }
  int sms = 0, per_sm = 0;
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, threads_per_block, shared_bytes));
  const int blocks = std::max(1, sms * per_sm);
  if (device < kCachedDevices) cached[device].store(blocks, std::memory_order_relaxed);
  return blocks;
}

/// A yes/no property of the current device, asked once per device through `ask(device)` and
/// kept in the caller's `cache` (0: not asked, 1: no, 2: yes) for the first 64 devices.
template <class Ask>
bool cached_device_answer(std::array<std::atomic<int>, 64>& cache, Ask ask) {
  int device = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  const auto slot = static_cast<std::size_t>(device);
  if (slot < cache.size()) {
    if (const int known = cache[slot].load(std::memory_order_relaxed); known != 0) return known == 2;
  }
  const bool yes = ask(device);
  if (slot < cache.size()) cache[slot].store(yes ? 2 : 1, std::memory_order_relaxed);
  return yes;
}

/// Rows per strip of a kernel whose blocks walk strips with a warm-up of rows at the start (the
/// `tensor` and double-precision `fast` kernels): `longest` (128) rows spread the warm-up over many
/// outputs; below 4 waves of `resident_blocks` the strips are halved, down to `shortest` (32), so
/// every SM gets work.
inline int strip_rows_for_waves(int height, int column_blocks, int resident_blocks, int longest = 128,
                                int shortest = 32) {
  int rows = longest;
  const auto blocks = [&](int r) {
    return static_cast<long long>(column_blocks) * static_cast<long long>((height + r - 1) / r);
  };
  while (rows > shortest && blocks(rows) < 4LL * resident_blocks) rows /= 2;
  return rows;
}

/// Rows per strip of a kernel whose every strip first reads `warmup` rows that give no output
/// (`fast`'s double-precision kernels: K - 1 rows, or the tiles of 8 row sums before the first
/// output tile): the strip count that minimises waves x (rows + warmup), the
/// time of the last SM to finish when each block's time grows with the rows it reads. Short strips
/// repeat the warm-up, long ones can leave the last wave part-empty; strip_rows_for_waves' 128 to
/// 32 rows took up to 1.8x as long (16-bit 2896^2, K = 31; kernel-notes/fast-wide.md, 'Strips of the
/// double sums'). Past 8 waves more strips only add warm-up rows. Strips are a multiple of
/// `multiple` rows (the FP64 tensor-core kernel's 8-row tiles).
inline int strip_rows_for_warmup(int height, int column_blocks, int resident_blocks, int warmup, int multiple = 1) {
  const long long slots = std::max(1, resident_blocks);
  const long long columns = std::max(1, column_blocks);
  const long long step = std::max(1, multiple);
  const long long max_strips = std::min<long long>(height, std::max(1LL, 8 * slots / columns));
  long long best_cost = -1;
  int best_rows = static_cast<int>((std::max(1, height) + step - 1) / step * step);
  for (long long count = 1; count <= max_strips; ++count) {
    const long long rows = ((height + count - 1) / count + step - 1) / step * step;
    if ((height + rows - 1) / rows != count) continue;  // the rows of another count
    const long long waves = (columns * count + slots - 1) / slots;
    const long long cost = waves * (rows + warmup);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_rows = static_cast<int>(rows);
    }
  }
  return best_rows;
}

/// Grid of a kernel whose blocks walk strips of `strip_rows` rows: x covers the columns, y one
/// strip a block, capped at gridDim.y's limit (the blocks loop over the remaining strips).
inline dim3 strip_grid(int column_blocks, int height, int strip_rows) {
  const int strips = (height + strip_rows - 1) / strip_rows;
  return dim3(static_cast<unsigned>(column_blocks),
              static_cast<unsigned>(strips < kernels::kMaxGridY ? strips : kernels::kMaxGridY));
}

}  // namespace cuconv::gpu
