// Launcher of the `constmem` variant (kernels/constmem.cuh).
#include "gpu/dispatch.cuh"

#include <kernels/constmem.cuh>

namespace cuconv::detail {

void launch_constmem(const LaunchArgs& a) {
  using namespace kernels;
  CUCONV_CUDA_TRY(upload_constant_filter(a.host_weights, a.params.kw * a.params.kh, a.stream));
  dispatch_types(a.src_type, a.dst_type, [&](auto pair) {
    using Pair = decltype(pair);
    dispatch_radius(a.params.kw, a.params.kh, [&](auto radius) {
      const dim3 block(kConstmemBlockX, kConstmemBlockY);
      const dim3 grid = tile_grid(a.width, a.height, kConstmemBlockX, kConstmemBlockY);
      constmem_kernel<typename Pair::in, typename Pair::out, radius.value>
          <<<grid, block, 0, a.stream>>>(source_view<Pair>(a), destination_view<Pair>(a), a.params);
      CUCONV_CHECK_LAUNCH();
    });
  });
}

}  // namespace cuconv::detail
