// SPDX-License-Identifier: Apache-2.0
#pragma once
// Run-time values to compile-time template arguments, each from ONE list:
//  - SupportedRadii: square (2R+1)^2 filters that get a fully unrolled instantiation; any other
//    size (rectangular, even, larger) takes the generic kRuntimeRadius instantiation;
//  - SupportedTypePairs: the (input, output) pixel types cv::filter2D allows for our depths.
// The launchers in src/gpu/launch/launch_*.cu fold over these lists; nothing is tabulated by hand.
#include "gpu/cuda_check.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu/launch/occupancy.cuh"  // strip_grid

#include <cuconv/error.hpp>
#include <kernels/common.cuh>

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace cuconv::gpu {

/// Radii with an unrolled instantiation: 3x3 .. 15x15.
using SupportedRadii = std::integer_sequence<int, 1, 2, 3, 4, 5, 6, 7>;

/// `fast` on separable filters costs kw + kh per output, so its unrolled list reaches 31x31.
using SeparableRadii = decltype([]<int... I>(std::integer_sequence<int, I...>) {
  return std::integer_sequence<int, (I + 1)...>{};
}(std::make_integer_sequence<int, 15>{}));

/// `tensor`'s separable kernels: 3x3 .. 17x17 (the row sums of a 16-row chunk and its halo fill
/// the two-chunk ring up to R = 8).
using TensorRadii = std::integer_sequence<int, 1, 2, 3, 4, 5, 6, 7, 8>;

/// `fast`'s tile kernel for tiny images (kernels/fast_tile.cuh): 3x3 .. 31x31, every centred
/// square `fast` sums densely (fast_kernel's unrolled ones up to 15x15, the generic kernel's past
/// it), whose sums it reproduces bit for bit (bench/results/kernel-notes/fast.md, 'Tiny images').
using FastTileRadii = SeparableRadii;

constexpr bool in_tensor_radii(int radius) {
  return []<int... R>(int r, std::integer_sequence<int, R...>) { return ((r == R) || ...); }
  (radius, TensorRadii{});
}

/// Channel counts of interleaved images (`fast`).
using SupportedChannels = std::integer_sequence<int, 1, 3, 4>;

template <class In, class Out>
struct TypePair {
  using in = In;
  using out = Out;
};
/// 8U -> 8U/16U/16S/32F, 16U -> 16U/32F, 32F -> 32F: the pairs cv::filter2D accepts.
using SupportedTypePairs =
    std::tuple<TypePair<std::uint8_t, std::uint8_t>, TypePair<std::uint8_t, std::uint16_t>,
               TypePair<std::uint8_t, std::int16_t>, TypePair<std::uint8_t, float>,
               TypePair<std::uint16_t, std::uint16_t>, TypePair<std::uint16_t, float>, TypePair<float, float>>;

template <class T>
constexpr PixelType pixel_type_of() {
  if constexpr (std::is_same_v<T, std::uint8_t>)
    return PixelType::u8;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return PixelType::u16;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return PixelType::s16;
  else {
    static_assert(std::is_same_v<T, float>);
    return PixelType::f32;
  }
}

/// Calls f(TypePair<In, Out>{}) for the pair of `Pairs` (SupportedTypePairs unless given) matching
/// (in, out).
template <class Pairs = SupportedTypePairs, class F>
void dispatch_types(PixelType in, PixelType out, F&& f) {
  const bool found = []<class... P>(PixelType i, PixelType o, F& fn, std::tuple<P...>*) {
    return ((i == pixel_type_of<typename P::in>() && o == pixel_type_of<typename P::out>() ? (fn(P{}), true) : false) ||
            ...);
  }(in, out, f, static_cast<Pairs*>(nullptr));
  if (!found) throw Error(ErrorKind::internal, "no kernel for this input/output pixel type pair");
}

/// Calls f(std::integral_constant<int, R>{}) with R the filter's radius when it is square, odd
/// and in `Radii` (SupportedRadii unless given), else with kernels::kRuntimeRadius.
template <class Radii = SupportedRadii, class F>
void dispatch_radius(int kw, int kh, F&& f) {
  const bool found = []<int... R>(int w, int h, F& fn, std::integer_sequence<int, R...>) {
    return ((w == h && w == 2 * R + 1 ? (fn(std::integral_constant<int, R>{}), true) : false) || ...);
  }
  (kw, kh, f, Radii{});
  if (!found) f(std::integral_constant<int, kernels::kRuntimeRadius>{});
}

/// Calls f(std::integral_constant<int, C>{}) for C in SupportedChannels; false if none matches.
template <class F>
bool dispatch_channels(int channels, F&& f) {
  return []<int... C>(int c, F& fn, std::integer_sequence<int, C...>) {
    return ((c == C ? (fn(std::integral_constant<int, C>{}), true) : false) || ...);
  }
  (channels, f, SupportedChannels{});
}

/// Grid over output tiles: x covers the width; y is capped at gridDim.y's limit and the kernels
/// loop over the remaining tile rows.
inline dim3 tile_grid(int width, int height, int tile_w, int tile_h) {
  const int tiles_x = (width + tile_w - 1) / tile_w;
  const int tiles_y = (height + tile_h - 1) / tile_h;
  return dim3(static_cast<unsigned>(tiles_x),
              static_cast<unsigned>(tiles_y < kernels::kMaxGridY ? tiles_y : kernels::kMaxGridY));
}

/// Typed plane views from the untyped launch arguments.
template <class Pair>
auto source_view(const LaunchArgs& a) {
  using In = typename Pair::in;
  return kernels::PlaneView<const In>{static_cast<const In*>(a.src.data), a.src.pitch, a.width, a.height};
}
template <class Pair>
auto destination_view(const LaunchArgs& a) {
  using Out = typename Pair::out;
  return kernels::PlaneView<Out>{static_cast<Out*>(a.dst.data), a.dst.pitch, a.width, a.height};
}

/// Raises a kernel's dynamic shared-memory limit when it needs more than the default 48 KiB,
/// after checking the device can give it.
template <class Kernel>
void reserve_shared_memory(Kernel kernel, std::size_t bytes, const char* variant_name, int kw, int kh) {
  if (bytes <= 48 * 1024) return;
  int device = 0;
  int optin = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes > static_cast<std::size_t>(optin)) {
    throw Error(ErrorKind::usage, std::string("a ") + std::to_string(kw) + "x" + std::to_string(kh) + " filter needs " +
                                      std::to_string(bytes) + " bytes of shared memory in variant " + variant_name +
                                      "; this GPU allows " + std::to_string(optin) +
                                      " (use `variant` cached or basic)");
  }
  CUCONV_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace cuconv::gpu
