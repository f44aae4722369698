// Launcher of the `tiled-halo` variant (kernels/tiled_halo.cuh).
#include "gpu/dispatch.cuh"

#include <kernels/tiled_halo.cuh>

namespace cuconv::detail {

void launch_tiled_halo(const LaunchArgs& a) {
  using namespace kernels;
  CUCONV_CUDA_TRY(upload_constant_filter(a.host_weights, a.params.kw * a.params.kh, a.stream));
  const std::size_t shared_bytes = tiled_halo_shared_bytes(a.params.kw, a.params.kh);
  dispatch_types(a.src_type, a.dst_type, [&](auto pair) {
    using Pair = decltype(pair);
    dispatch_radius(a.params.kw, a.params.kh, [&](auto radius) {
      auto* kernel = tiled_halo_kernel<typename Pair::in, typename Pair::out, radius.value>;
      reserve_shared_memory(kernel, shared_bytes, "tiled-halo", a.params.kw, a.params.kh);
      const dim3 block(kHaloTileW, kHaloTileH);
      const dim3 grid = tile_grid(a.width, a.height, kHaloTileW, kHaloTileH);
      kernel<<<grid, block, shared_bytes, a.stream>>>(source_view<Pair>(a),
                                                      destination_view<Pair>(a), a.params);
      CUCONV_CHECK_LAUNCH();
    });
  });
}

std::size_t shared_bytes_tiled_halo(int kw, int kh) { return kernels::tiled_halo_shared_bytes(kw, kh); }

}  // namespace cuconv::detail
