// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file common.cuh
/// What every convolution kernel shares: plane views, the problem description, border rules
/// (identical to cv::borderInterpolate) and rounding (identical to cv::saturate_cast<T>(float)).
#include "params.hpp"

#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace cuconv::kernels {

/// Non-owning view of one pitched plane (one channel), passed to kernels by value.
template <class T>
struct PlaneView {
  T* data;
  std::size_t pitch_bytes;  ///< bytes between row starts (>= width * sizeof(T))
  int width;
  int height;

  /// Row pointer; 64-bit arithmetic because rows * pitch can pass 2^31 bytes.
  __device__ __forceinline__ T* row(int y) const {
    using Byte = std::conditional_t<std::is_const_v<T>, const unsigned char, unsigned char>;
    return reinterpret_cast<T*>(reinterpret_cast<Byte*>(data) + static_cast<std::size_t>(y) * pitch_bytes);
  }
};

/// Maps a coordinate outside [0, len) into it like cv::borderInterpolate; -1 for constant.
/// The loop handles filters larger than the image (several reflections).
__device__ __forceinline__ int interpolate_border(int p, int len, BorderRule rule) {
  if (static_cast<unsigned>(p) < static_cast<unsigned>(len)) return p;
  switch (rule) {
    case BorderRule::replicate:
      return p < 0 ? 0 : len - 1;
    case BorderRule::wrap:
      if (p < 0) p -= ((p - len + 1) / len) * len;
      return p >= len ? p % len : p;
    case BorderRule::constant:
      return -1;
    default: {  // reflect (edge pixel repeated) or reflect101 (edge pixel not repeated)
      if (len == 1) return 0;
      const int skip_edge = rule == BorderRule::reflect101 ? 1 : 0;
      do {
        p = p < 0 ? -p - 1 + skip_edge : len - 1 - (p - len) - skip_edge;
      } while (static_cast<unsigned>(p) >= static_cast<unsigned>(len));
      return p;
    }
  }
}

/// How a kernel reads input elements: through the read-only data path (__ldg), or with plain
/// loads where the kernel's other loads are plain too (fast_generic_kernel).
enum class InputLoad { read_only, plain };

/// The border read every kernel shares: channel `channel` of pixel (yy, xx) of an interleaved
/// plane of `channels` channels, both coordinates already mapped by interpolate_border (-1 in
/// either: the constant border value), as float. (`fast`'s compiled kernel reads whole chunks and
/// finds its border positions once per thread instead: kernels/fast_rows.cuh.)
template <class T, InputLoad Load = InputLoad::read_only>
__device__ __forceinline__ float mapped_element(const PlaneView<const T>& src, int yy, int xx, int channel,
                                                int channels, const ConvParams& p) {
  if (yy < 0 || xx < 0) return p.border_value;
  if constexpr (Load == InputLoad::read_only) {
    return static_cast<float>(__ldg(src.row(yy) + (static_cast<long long>(xx) * channels + channel)));
  } else {
    return static_cast<float>(src.row(yy)[xx * channels + channel]);  // row_elems fits an int
  }
}

/// Channel `channel` of pixel (y, x) of an interleaved plane of `channels` channels, with the
/// border rule applied (mapped_element), as float, read through the read-only data path.
template <class T>
__device__ __forceinline__ float load_element(const PlaneView<const T>& src, int y, int x, int channel, int channels,
                                              const ConvParams& p) {
  return mapped_element(src, interpolate_border(y, src.height, p.border), interpolate_border(x, src.width, p.border),
                        channel, channels, p);
}

/// Input sample at (y, x) of a one-channel plane, with the border rule applied (load_element).
template <class T>
__device__ __forceinline__ float load_pixel(const PlaneView<const T>& src, int y, int x, const ConvParams& p) {
  return load_element(src, y, x, 0, 1, p);
}

/// True when the filter window of output (x, y) lies wholly inside the image, so its pixels can be
/// read without the border rule (the common case; border handling then costs nothing inside).
__device__ __forceinline__ bool window_inside(int x, int y, int kw, int kh, int width, int height,
                                              const ConvParams& p) {
  const int left = x - p.anchor_x;
  const int top = y - p.anchor_y;
  return left >= 0 && top >= 0 && left + kw <= width && top + kh <= height;
}

/// `v` rounded half to even and clamped to the 8- or 16-bit type T, without F2I (16 per clock
/// per SM on sm_90, an eighth of the FFMA rate): clamp in float (NaN gives the lowest value), then
/// add 1.5 * 2^23; that addition rounds half to even and leaves the integer in the low mantissa
/// bits (exact for |v| < 2^22, which the clamp ensures). Out-of-int-range values are clamped, not
/// sent to INT_MIN as cvRound does: callers handle them first.
template <class T>
__device__ __forceinline__ T round_clamp_small_int(float v) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 2, "8- and 16-bit results only");
  constexpr float lo = static_cast<float>(std::numeric_limits<T>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<T>::max());
  return static_cast<T>(__float_as_int(__fadd_rn(fminf(fmaxf(v, lo), hi), 12582912.0f)) - 0x4B400000);
}

/// A double sum rounded half to even and clamped to the 16-bit type T (the sum is finite: integer
/// inputs, finite weights): the exact sum's rounding, for `fast`'s double-precision paths.
template <class T>
__device__ __forceinline__ T round_clamp_double(double v) {
  static_assert(std::is_integral_v<T> && sizeof(T) == 2, "16-bit results");
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  return static_cast<T>(fmin(fmax(rint(v), lo), hi));
}

/// cv::saturate_cast<T>(float): round half to even (cvRound), then clamp. Like cvRound on x86, a
/// value outside int's range (or NaN) becomes INT_MIN before the clamp.
template <class T>
__device__ __forceinline__ T saturate_from_float(float v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v;  // float output: no rounding
  } else if constexpr (sizeof(T) <= 2) {
    // INT_MIN clamps to the lowest value; NaN compares false and gets it too.
    return round_clamp_small_int<T>(fabsf(v) < 2147483648.0f ? v : static_cast<float>(std::numeric_limits<T>::min()));
  } else {
    const int r = (v > -2147483648.0f && v < 2147483648.0f) ? __float2int_rn(v) : INT_MIN;
    constexpr int lo = static_cast<int>(std::numeric_limits<T>::min());
    constexpr int hi = static_cast<int>(std::numeric_limits<T>::max());
    return static_cast<T>(r < lo ? lo : (r > hi ? hi : r));
  }
}

/// saturate_from_float for a v known to lie inside int's range (|v| < 2^30: the launcher bounds
/// the sums by the weights, delta and input range), which spares cvRound's out-of-range rule: one
/// compare and one select per 8- or 16-bit result.
template <class T>
__device__ __forceinline__ T saturate_inside_int(float v) {
  if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
    return round_clamp_small_int<T>(v);
  } else {
    return saturate_from_float<T>(v);
  }
}

/// a / b rounded down (b > 0): the pixel of a possibly negative element index of rows of b
/// interleaved channels, where C++'s division rounds toward zero.
__host__ __device__ constexpr int floor_div(int a, int b) { return a >= 0 ? a / b : -((b - 1 - a) / b); }
static_assert(floor_div(5, 3) == 1 && floor_div(-1, 3) == -1 && floor_div(-3, 3) == -1 && floor_div(-4, 3) == -2 &&
                  floor_div(-1, 1) == -1 && floor_div(0, 4) == 0,
              "floor_div rounds down on both sides of 0");

/// Ceil division for grid sizes and tile counts. Both operands share one type, so a 64-bit count
/// is never narrowed on the way in.
template <class T>
__host__ __device__ constexpr T div_up(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace cuconv::kernels
