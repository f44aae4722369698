// SPDX-License-Identifier: Apache-2.0
// Launcher of the channel move (kernels/channels.cuh) between device images.
#include "gpu/launch/dispatch.cuh"

#include <kernels/channels.cuh>

namespace cuconv::gpu {

namespace {

/// The moves the GPU path makes: a channel within one pixel type (split and merge, 16S outputs
/// included), and alpha from the input type into each output type cv::filter2D allows.
using ChannelMovePairs =
    decltype(std::tuple_cat(std::tuple<TypePair<std::int16_t, std::int16_t>>{}, SupportedTypePairs{}));

/// The pixels of `image` as the kernels' typed plane (its width in pixels).
template <class T, class Byte>
kernels::PlaneView<T> typed_plane(const BasicDeviceImageView<Byte>& image) {
  return {reinterpret_cast<T*>(image.data), image.pitch, image.width, image.height};
}

}  // namespace

void launch_copy_channel(ConstDeviceImageView src, int from_channel, DeviceImageView dst, int to_channel,
                         cudaStream_t stream) {
  if (src.width != dst.width || src.height != dst.height)
    throw Error(ErrorKind::internal, "launch_copy_channel: images of different sizes");
  dispatch_types<ChannelMovePairs>(pixel_type_for_depth(src.depth), pixel_type_for_depth(dst.depth), [&](auto pair) {
    using In = typename decltype(pair)::in;
    using Out = typename decltype(pair)::out;
    const dim3 block(kernels::kChannelBlockX, kernels::kChannelBlockY);
    const dim3 grid = tile_grid(src.width, src.height, kernels::kChannelBlockX, kernels::kChannelBlockY);
    kernels::copy_channel_kernel<In, Out><<<grid, block, 0, stream>>>(
        typed_plane<const In>(src), src.channels, from_channel, typed_plane<Out>(dst), dst.channels, to_channel);
    CUCONV_CHECK_LAUNCH();
  });
}

}  // namespace cuconv::gpu
