// SPDX-License-Identifier: Apache-2.0
#pragma once
// Host-side interface to the kernel launchers (one .cu file per variant). Compiled by both g++
// (gpu_convolve.cpp) and nvcc (the launchers): only the CUDA runtime API, no device code.
#include <cuconv/convolve.hpp>
#include <cuconv/device_image.hpp>
#include <kernels/params.hpp>

#include "filter/splits.hpp"  // DenseTensorSplit, SeparableFactors, kTensorDenseMaxSide

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace cuconv::gpu {

/// Element types of device planes.
enum class PixelType { u8, u16, s16, f32 };

/// The device pixel type of an OpenCV depth (CV_8U, CV_16U, CV_16S, CV_32F); Error{internal} for
/// any other.
[[nodiscard]] PixelType pixel_type_for_depth(int depth);

/// The plane a launch reads: untyped, with its element type.
struct SourcePlane {
  const void* data;
  std::size_t pitch;  ///< bytes between rows
  PixelType type;
};

/// The plane a launch writes.
struct DestinationPlane {
  void* data;
  std::size_t pitch;  ///< bytes between rows
  PixelType type;
};

/// The filter's kh x kw weights, row-major.
struct LaunchWeights {
  const float* device;            ///< in global memory (read there, or copied to __constant__ by the PMPP variants)
  const float* host;              ///< the same on the host (kernel arguments of the unrolled kernels, host checks)
  const double* exact = nullptr;  ///< the filter's weights in double, row-major (the exact sum's), on the host
};

/// A rank-1 filter's factors and which paths' pass rules they meet, as SeparableFactors has them
/// (rank1_weights); all null and false when the filter is not rank 1.
struct Rank1Weights {
  const float* horizontal = nullptr;        ///< kw weights (host)
  const float* vertical = nullptr;          ///< kh weights (host)
  const double* horizontal_wide = nullptr;  ///< the kw factors in double (fits_double_rank1)
  const double* vertical_wide = nullptr;    ///< the kh factors in double
  double wide_delta = 0;                    ///< delta in double (params.delta is its float)
  bool fits_float_rank1 = false;            ///< SeparableFactors::fits_float_rank1: `fast` may run it
  bool fits_tensor_split = false;           ///< SeparableFactors::fits_tensor_split: `tensor` may run it
  bool fits_tensor_mma_split = false;       ///< SeparableFactors::fits_tensor_mma_split: both passes on tensor cores
  bool fits_double_rank1 = false;           ///< SeparableFactors::fits_double_rank1: `fast` may sum it in double
};

/// `factors` as a launch takes them, with the filter's `delta`.
[[nodiscard]] inline Rank1Weights rank1_weights(const filter::SeparableFactors& factors, double delta) {
  return {.horizontal = factors.horizontal.data(),
          .vertical = factors.vertical.data(),
          .horizontal_wide = factors.horizontal_wide.data(),
          .vertical_wide = factors.vertical_wide.data(),
          .wide_delta = delta,
          .fits_float_rank1 = factors.fits_float_rank1,
          .fits_tensor_split = factors.fits_tensor_split,
          .fits_tensor_mma_split = factors.fits_tensor_mma_split,
          .fits_double_rank1 = factors.fits_double_rank1};
}

/// One plane-to-plane convolution, as the launchers receive it. The PMPP variants get one
/// channel per plane (channels == 1); `fast` gets interleaved rows of width * channels elements.
struct LaunchArgs {
  SourcePlane src;
  DestinationPlane dst;
  int width;
  int height;
  kernels::ConvParams params;  ///< the filter's size and anchor, delta, the border rule
  LaunchWeights weights;
  cudaStream_t stream;
  int channels = 1;         ///< interleaved channels per pixel (fast only)
  bool keep_alpha = false;  ///< channels == 4: copy channel 3 instead of filtering
  Rank1Weights rank1{};     ///< the rank-1 factors, when the filter has them
  const filter::DenseTensorSplit* dense_tensor =
      nullptr;  ///< ConvolveJob::dense_tensor (8-bit, 16-bit or float in and out)
};

/// One launch of a variant with the device images it reads and writes (what --bench times and
/// copies for the memory roof).
struct VariantLaunch {
  LaunchArgs args;
  ConstDeviceImageView in;
  DeviceImageView out;
};

/// Launches `variant` (any GPU variant) on `args`. Throws Error{gpu} on a CUDA failure and
/// Error{usage} when the filter is too large for the variant on this device.
void launch_variant(Variant variant, const LaunchArgs& args);

/// Channel `from_channel` of `src` into channel `to_channel` of `dst` (same width and height),
/// converted as cv::saturate_cast does (src/gpu/launch/launch_channels.cu).
void launch_copy_channel(ConstDeviceImageView src, int from_channel, DeviceImageView dst, int to_channel,
                         cudaStream_t stream);

/// Stores `count` weights from the host into `device` on `stream`, carried as kernel arguments
/// (src/gpu/launch/launch_weights.cu): nothing on the host must outlive the call, and the host
/// never waits, as a copy from pageable memory may.
void launch_store_weights(float* device, const float* host, std::size_t count, cudaStream_t stream);

/// Per-variant launchers (listed in kVariantLaunchers below): launch_basic.cu, launch_fast.cu,
/// launch_tensor.cu, launch_fft.cu, and launch_constant_weights.cu for the four that read their
/// weights from __constant__ memory.
void launch_basic(const LaunchArgs& args);
void launch_constmem(const LaunchArgs& args);
void launch_tiled(const LaunchArgs& args);
void launch_tiled_halo(const LaunchArgs& args);
void launch_cached(const LaunchArgs& args);
void launch_fast(const LaunchArgs& args);
void launch_tensor(const LaunchArgs& args);  ///< `fast` where neither tensor-core kernel applies

/// `fast` on a tiny image (kernels/fast_tile.cuh) when the arguments allow it (one of u8, u16 or
/// f32 in and out, a square filter of FastTileRadii, fast_tile_applies; in double where
/// fast_wide_runs, then fast_tile_double_applies); false (nothing launched) otherwise.
bool launch_fast_tile(const LaunchArgs& args);
/// Whether `fast` runs a kw x kh filter on an image of `row_elems` elements a row (interleaved
/// channels included) and `height` rows as its tile kernel (a square of FastTileRadii and
/// fast_tile_applies, or fast_tile_double_applies for the double sums of `sums_in_double`; false
/// for an empty or unknown size), for any of its pixel types.
[[nodiscard]] bool fast_tile_runs(int kw, int kh, int row_elems, int height, bool sums_in_double = false);
/// The tiles of 32 elements x 8 rows that cover an image of `row_elems` elements a row and
/// `height` rows (0 for an empty or unknown size).
[[nodiscard]] long long fast_tile_count(int row_elems, int height);

/// `fast` on a 16-bit rank-1 filter in double precision (kernels/fast_wide.cuh) when the
/// arguments allow it (u16 in and out, SeparableFactors::fits_double_rank1, kw and kh up to 31, one of them at
/// least 15); false (nothing launched) otherwise.
bool launch_fast_wide(const LaunchArgs& args);
/// Whether `fast` sums a kw x kh filter in double: 16-bit in and out (`sixteen_bit`),
/// `double_rank1` (SeparableFactors::fits_double_rank1), a side of kFastWideMinSide to 31 and 1 to
/// 4 channels; on tiny images its tile kernel's double sums (launch_fast_tile), elsewhere
/// launch_fast_wide's kernel.
[[nodiscard]] bool fast_wide_runs(bool sixteen_bit, int kw, int kh, int channels, bool double_rank1);
/// Whether those double sums run on the FP64 tensor cores (kernels/fast_wide_mma.cuh: one channel)
/// where the device has MMA, rather than on the FMA units (kernels/fast_wide.cuh).
[[nodiscard]] bool fast_wide_mma_runs(int channels);
/// The smallest side `fast` sums in double: below it its float kernels are faster
/// (bench/results/kernel-notes/fast-wide.md) and give filter2D's results.
inline constexpr int kFastWideMinSide = 15;

/// Whether `tensor` has a kernel for a centred (2R+1)^2 separable filter of this radius whose
/// split holds for the FP32 column sums (SeparableFactors::fits_tensor_split: radii 1-8) or for both
/// passes on tensor cores (SeparableFactors::fits_tensor_mma_split: radii 4-15).
[[nodiscard]] bool tensor_separable_supported(int radius, bool fp32_columns, bool mma);

/// `tensor`'s dense kernel on warpgroup MMAs (kernels/tensor_dense_wgmma.cuh) for a one-channel
/// 8-bit image with 16-byte aligned rows on a compute capability 9.0 GPU; false (nothing
/// launched) otherwise, and the 8-bit dense kernel runs it. A launch observer (gpu/seams.hpp)
/// may turn it off, so the tests compare the two kernels.
bool launch_tensor_dense_wgmma(const LaunchArgs& args, const filter::DenseTensorSplit& split);
/// Whether the current device runs the sm_90a kernels: compute capability 9.0 and a kernel image
/// in this build, asked once per device.
[[nodiscard]] bool device_runs_wgmma();

/// Whether `tensor` runs these arguments on the dense tensor-core kernel.
[[nodiscard]] bool tensor_dense_applies(const LaunchArgs& args);

/// Whether the current device has the MMAs the `tensor` kernels use (sm_80 and newer), asked once
/// per device.
[[nodiscard]] bool device_has_mma();

/// `tensor`'s dense planes kernel for float and 16-bit images, and for 8-bit ones with a side
/// past kTensorDenseMaxSide (kernels/tensor_dense_planes.cuh), when the arguments allow it
/// (tensor_dense_planes_applies); false (nothing launched) otherwise.
bool launch_tensor_dense_planes(const LaunchArgs& args);
[[nodiscard]] bool tensor_dense_planes_applies(const LaunchArgs& args);

void launch_fft(const LaunchArgs& args);

/// A GPU variant's launcher, and whether it filters interleaved rows itself (one plane of
/// width x channels elements) or is handed one plane per channel.
struct VariantLauncher {
  Variant variant;
  void (*launch)(const LaunchArgs&);
  bool interleaved;
};

/// The one list of GPU variants' launchers: launch_variant and filters_interleaved read it, and
/// gpu_convolve.cpp checks at compile time that every GPU variant of common::kVariants has a row.
inline constexpr std::array<VariantLauncher, 8> kVariantLaunchers{{
    {Variant::basic, launch_basic, false},
    {Variant::constmem, launch_constmem, false},
    {Variant::tiled, launch_tiled, false},
    {Variant::tiled_halo, launch_tiled_halo, false},
    {Variant::cached, launch_cached, false},
    {Variant::fast, launch_fast, true},
    {Variant::tensor, launch_tensor, true},
    {Variant::fft, launch_fft, true},
}};

/// `variant`'s row of kVariantLaunchers; nullptr for the host ones (auto, opencv).
[[nodiscard]] constexpr const VariantLauncher* find_launcher(Variant variant) noexcept {
  for (const VariantLauncher& launcher : kVariantLaunchers)
    if (launcher.variant == variant) return &launcher;
  return nullptr;
}

/// Variants that filter interleaved rows in place; the others get one plane per channel.
[[nodiscard]] constexpr bool filters_interleaved(Variant variant) noexcept {
  const VariantLauncher* launcher = find_launcher(variant);
  return launcher != nullptr && launcher->interleaved;
}

/// Side (a power of two) of the tiles `fft` uses along an image side for a filter side k.
[[nodiscard]] int fft_tile_side(int k, int image_side);

/// The compiled (unrolled, vectorised) fast kernel for one pixel-type pair and mode, one per
/// launch_fast_*.cu file so the instantiations build in parallel. False when the filter has no
/// compiled instantiation (not a centred (2R+1)^2 with R in the radius list).
template <class In, class Out, bool Separable>
bool launch_fast_compiled(const LaunchArgs& args);

/// Dynamic shared-memory bytes the tiled variants need for a kw x kh filter; the others use a
/// fixed amount (cached: 2 KiB) or none.
[[nodiscard]] std::size_t shared_bytes_tiled(int kw, int kh);
[[nodiscard]] std::size_t shared_bytes_tiled_halo(int kw, int kh);

}  // namespace cuconv::gpu
