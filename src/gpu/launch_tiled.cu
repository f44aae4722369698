// Launcher of the `tiled` variant (kernels/tiled.cuh): picks the input-tile coarsening.
#include "gpu/dispatch.cuh"

#include <kernels/tiled.cuh>

#include <algorithm>

namespace cuconv::detail {

namespace {
/// Smallest coarsening (1, 2, 4) whose output tile keeps at least 8 pixels per side, so the
/// halo does not dominate; 4 always leaves >= 2 for kMaxFilterSide.
kernels::TiledGeometry tiled_geometry(int kw, int kh) {
  const int largest = std::max(kw, kh);
  int coarsen = 1;
  while (coarsen < 4 && kernels::kTiledBlockSide * coarsen - largest + 1 < 8) coarsen *= 2;
  const int side = kernels::kTiledBlockSide * coarsen;
  return {coarsen, side, side - kw + 1, side - kh + 1};
}
}  // namespace

void launch_tiled(const LaunchArgs& a) {
  using namespace kernels;
  CUCONV_CUDA_TRY(upload_constant_filter(a.host_weights, a.params.kw * a.params.kh, a.stream));
  const TiledGeometry geometry = tiled_geometry(a.params.kw, a.params.kh);
  const std::size_t shared_bytes = shared_bytes_tiled(a.params.kw, a.params.kh);
  dispatch_types(a.src_type, a.dst_type, [&](auto pair) {
    using Pair = decltype(pair);
    dispatch_radius(a.params.kw, a.params.kh, [&](auto radius) {
      auto* kernel = tiled_kernel<typename Pair::in, typename Pair::out, radius.value>;
      reserve_shared_memory(kernel, shared_bytes, "tiled", a.params.kw, a.params.kh);
      const dim3 block(kTiledBlockSide, kTiledBlockSide);
      const dim3 grid = tile_grid(a.width, a.height, geometry.out_w, geometry.out_h);
      kernel<<<grid, block, shared_bytes, a.stream>>>(source_view<Pair>(a),
                                                      destination_view<Pair>(a), a.params, geometry);
      CUCONV_CHECK_LAUNCH();
    });
  });
}

std::size_t shared_bytes_tiled(int kw, int kh) {
  const int side = tiled_geometry(kw, kh).in_side;
  return sizeof(float) * static_cast<std::size_t>(side) * static_cast<std::size_t>(side);
}

}  // namespace cuconv::detail
