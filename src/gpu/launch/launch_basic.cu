// SPDX-License-Identifier: Apache-2.0
// Launcher of the `basic` variant (kernels/basic.cuh): run-time filter size only, by design.
#include "gpu/launch/dispatch.cuh"

#include <kernels/basic.cuh>

namespace cuconv::gpu {

void launch_basic(const LaunchArgs& a) {
  using namespace kernels;
  dispatch_types(a.src.type, a.dst.type, [&](auto pair) {
    using Pair = decltype(pair);
    const dim3 block(kBasicBlockX, kBasicBlockY);
    const dim3 grid = tile_grid(a.width, a.height, kBasicBlockX, kBasicBlockY);
    basic_kernel<typename Pair::in, typename Pair::out>
        <<<grid, block, 0, a.stream>>>(source_view<Pair>(a), destination_view<Pair>(a), a.params, a.weights.device);
    CUCONV_CHECK_LAUNCH();
  });
}

}  // namespace cuconv::gpu
