// SPDX-License-Identifier: Apache-2.0
// Launchers of the four PMPP variants that read their weights from __constant__ memory: constmem,
// cached, tiled and tiled-halo (kernels/<variant>.cuh). They share one launch: upload the weights
// into this unit's constant filter, then one instantiation per (pixel-type pair, radius) on a
// grid of output tiles. Each variant below says only its kernel, block and tile shape.
#include "gpu/launch/dispatch.cuh"

#include <kernels/cached.cuh>
#include <kernels/constant_filter.cuh>
#include <kernels/constmem.cuh>
#include <kernels/tiled.cuh>
#include <kernels/tiled_halo.cuh>

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>

namespace cuconv::gpu {

namespace {

/// A variant's launch shape: `block` threads a block, each block `tile_w` x `tile_h` outputs,
/// `shared_bytes` of dynamic shared memory (checked against the device when over 48 KiB).
struct TileLaunch {
  const char* variant_name;
  dim3 block;
  int tile_w;
  int tile_h;
  std::size_t shared_bytes = 0;
};

/// One thread per output: blocks of `w` x `h` threads, tiles of `w` x `h` outputs.
TileLaunch thread_per_output(const char* name, int w, int h, std::size_t shared_bytes = 0) {
  return {name, dim3(w, h), w, h, shared_bytes};
}

/// The device's one __constant__ filter is shared by every thread and stream of the process. Its
/// turn: a launch copies its weights in (device to device, on its stream) only after the kernels
/// of the launch before have read theirs, an order kept on the device by one event per device
/// (`read`), so concurrent commands with other filters (`cuconv serve`, batch threads, Python
/// callers' streams) never filter with each other's weights, and the host never waits. The mutex
/// orders the launches' turns on the host.
struct ConstantFilterTurn {
  std::mutex mutex;
  std::array<cudaEvent_t, 64> read{};  ///< by device; made on its first turn, kept for the process
};

ConstantFilterTurn& constant_filter_turn() {
  static ConstantFilterTurn turn;
  return turn;
}

/// Launches `kernel_for(TypePair<In, Out>{}, std::integral_constant<int, R>{})` (a kernel taking
/// the source and destination views, the parameters and then `extra...`) on `a`, in the constant
/// filter's turn.
template <class KernelFor, class... Extra>
void launch_tiles(const LaunchArgs& a, const TileLaunch& shape, KernelFor kernel_for, const Extra&... extra) {
  ConstantFilterTurn& turn = constant_filter_turn();
  const std::lock_guard lock(turn.mutex);
  int device = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  if (device < 0 || static_cast<std::size_t>(device) >= turn.read.size())
    throw Error(ErrorKind::gpu, "the constant-memory variants run on the first 64 devices only");
  cudaEvent_t& read = turn.read[static_cast<std::size_t>(device)];
  if (read == nullptr) CUCONV_CUDA_TRY(cudaEventCreateWithFlags(&read, cudaEventDisableTiming));
  CUCONV_CUDA_TRY(cudaStreamWaitEvent(a.stream, read, 0));
  CUCONV_CUDA_TRY(kernels::upload_constant_filter(a.weights.device, a.params.kw * a.params.kh, a.stream));
  try {
    dispatch_types(a.src.type, a.dst.type, [&](auto pair) {
      using Pair = decltype(pair);
      dispatch_radius(a.params.kw, a.params.kh, [&](auto radius) {
        auto* kernel = kernel_for(pair, radius);
        reserve_shared_memory(kernel, shape.shared_bytes, shape.variant_name, a.params.kw, a.params.kh);
        const dim3 grid = tile_grid(a.width, a.height, shape.tile_w, shape.tile_h);
        kernel<<<grid, shape.block, shape.shared_bytes, a.stream>>>(source_view<Pair>(a), destination_view<Pair>(a),
                                                                    a.params, extra...);
        CUCONV_CHECK_LAUNCH();
      });
    });
  } catch (...) {
    cudaEventRecord(read, a.stream);  // the copy is queued: the next turn's copy must come after it
    throw;
  }
  CUCONV_CUDA_TRY(cudaEventRecord(read, a.stream));  // the next turn's copy waits for these kernels
}

/// The kernel template `kernel` as launch_tiles' `kernel_for`: a kernel template's name cannot be
/// a template argument, so a generic lambda carries it.
#define CUCONV_TILE_KERNEL(kernel)                              \
  []<class Pair, int R>(Pair, std::integral_constant<int, R>) { \
    return kernel<typename Pair::in, typename Pair::out, R>;    \
  }

/// `tiled`: the smallest coarsening (1, 2, 4) whose output tile keeps at least 8 pixels per side,
/// so the halo does not dominate; 4 always leaves >= 2 for kMaxFilterSide.
kernels::TiledGeometry tiled_geometry(int kw, int kh) {
  const int largest = std::max(kw, kh);
  int coarsen = 1;
  while (coarsen < 4 && kernels::kTiledBlockSide * coarsen - largest + 1 < 8) coarsen *= 2;
  const int side = kernels::kTiledBlockSide * coarsen;
  return {coarsen, side, side - kw + 1, side - kh + 1};
}

}  // namespace

void launch_constmem(const LaunchArgs& a) {
  using namespace kernels;
  launch_tiles(a, thread_per_output("constmem", kConstmemBlockX, kConstmemBlockY), CUCONV_TILE_KERNEL(constmem_kernel));
}

void launch_cached(const LaunchArgs& a) {
  using namespace kernels;
  launch_tiles(a, thread_per_output("cached", kCachedTileW, kCachedTileH), CUCONV_TILE_KERNEL(cached_kernel));
}

void launch_tiled_halo(const LaunchArgs& a) {
  using namespace kernels;
  const std::size_t shared_bytes = shared_bytes_tiled_halo(a.params.kw, a.params.kh);
  launch_tiles(a, thread_per_output("tiled-halo", kHaloTileW, kHaloTileH, shared_bytes),
               CUCONV_TILE_KERNEL(tiled_halo_kernel));
}

void launch_tiled(const LaunchArgs& a) {
  using namespace kernels;
  // The block loads an input tile of in_side^2 (coarsen^2 pixels a thread) and computes its valid part.
  const TiledGeometry geometry = tiled_geometry(a.params.kw, a.params.kh);
  const TileLaunch shape{"tiled", dim3(kTiledBlockSide, kTiledBlockSide), geometry.out_w, geometry.out_h,
                         shared_bytes_tiled(a.params.kw, a.params.kh)};
  launch_tiles(a, shape, CUCONV_TILE_KERNEL(tiled_kernel), geometry);
}

std::size_t shared_bytes_tiled(int kw, int kh) {
  const int side = tiled_geometry(kw, kh).in_side;
  return sizeof(float) * static_cast<std::size_t>(side) * static_cast<std::size_t>(side);
}

std::size_t shared_bytes_tiled_halo(int kw, int kh) { return kernels::tiled_halo_shared_bytes(kw, kh); }

}  // namespace cuconv::gpu
