// SPDX-License-Identifier: Apache-2.0
// Launcher of the `fast` variant (kernels/fast.cuh): the tile kernel on tiny images where it
// applies (launch_fast_tile.cu, in double for the 16-bit rank-1 filters below); the
// double-precision separable kernel for 16-bit rank-1 filters from 15x15 where it applies
// (launch_fast_wide.cu); the compiled, unrolled kernel when
// the filter is a centred (2R+1)^2 with R in the radius list (separable filters: SeparableRadii)
// and the pixel types are the same in and out; the generic interleaved kernel otherwise.
#include "gpu/launch/dispatch.cuh"

#include <kernels/fast.cuh>
#include <kernels/fast_generic.cuh>

namespace cuconv::gpu {

namespace {

template <class Pair>
bool launch_compiled_for(const LaunchArgs& a) {
  using In = typename Pair::in;
  using Out = typename Pair::out;
  if constexpr (std::is_same_v<In, Out>) {
    if (launch_fast_tile(a)) return true;  // tiny images (16-bit rank-1 filters from 15x15: in double)
    if (launch_fast_wide(a)) return true;  // other 16-bit rank-1 filters from 15x15, in double
    if (a.rank1.fits_float_rank1 && a.rank1.horizontal != nullptr && a.rank1.vertical != nullptr &&
        launch_fast_compiled<In, Out, true>(a))
      return true;
    return launch_fast_compiled<In, Out, false>(a);
  } else {
    return false;  // mixed depths are rare: the generic kernel serves them
  }
}

}  // namespace

void launch_fast(const LaunchArgs& a) {
  using namespace kernels;
  if (a.channels != 1 && a.channels != 3 && a.channels != 4)
    throw Error(ErrorKind::internal, "fast: unsupported channel count " + std::to_string(a.channels));
  dispatch_types(a.src.type, a.dst.type, [&](auto pair) {
    using Pair = decltype(pair);
    if (launch_compiled_for<Pair>(a)) return;
    const int row_elems = a.width * a.channels;
    const dim3 block(kFastGenericBlockX, kFastGenericBlockY);
    const dim3 grid = tile_grid(row_elems, a.height, kFastGenericBlockX, kFastGenericBlockY);
    fast_generic_kernel<typename Pair::in, typename Pair::out><<<grid, block, 0, a.stream>>>(
        source_view<Pair>(a), destination_view<Pair>(a), a.params, a.channels, a.weights.device, a.keep_alpha);
    CUCONV_CHECK_LAUNCH();
  });
}

}  // namespace cuconv::gpu
