// SPDX-License-Identifier: Apache-2.0
// The one place that decides what `--variant auto` runs (docs/design.md, "How auto chooses").
// The numbers come from one row of the tuning table (src/gpu/tuning/auto_tuning.hpp); the rules
// below hold only what the kernels can run and the accuracy each path keeps.
#include "convolve/choose_variant.hpp"

#include "gpu/device_select.hpp"
#include "gpu/launch/cufft_api.hpp"
#include "gpu/launch/fft_ties.hpp"
#include "gpu/launch/launch.hpp"

#include <algorithm>
#include <limits>

namespace cuconv::convolution {

namespace {

/// Largest radius of `fast`'s unrolled kernels: dense centred squares (SupportedRadii in
/// src/gpu/launch/dispatch.cuh) and rank-1 ones (SeparableRadii), which cost kw + kh an output.
constexpr int kFastDenseMaxRadius = 7;
constexpr int kFastRank1MaxRadius = 15;

bool runs_wgmma(const AutoDevice& device) { return device.runs_wgmma != nullptr && device.runs_wgmma(); }

}  // namespace

AutoDevice current_auto_device(bool gpu_present) {
  if (!gpu_present) return {};
  const gpu::tuning::GpuKind kind = gpu::current_gpu_kind();
  // No device to ask (a caller that says a GPU is present on a machine without one): the
  // generic row, and no warpgroup kernel.
  if (kind.major == 0) return {true, &gpu::tuning::kGeneric, nullptr};
  return {true, &gpu::tuning::auto_tuning_for(kind), &gpu::device_runs_wgmma};
}

Variant choose_auto(const AutoRequest& r, const AutoDevice& device) {
  // No usable GPU: OpenCV on the CPU is the only path (the CLI warns about it).
  if (!device.present) return Variant::opencv;
  const gpu::tuning::AutoTuning& t = *device.tuning;
  const Filter& filter = r.filter;
  const int anchor_x = r.options.anchor_x >= 0 ? r.options.anchor_x : filter.resolved_anchor_x();
  const bool centred_square = filter.width == filter.height && filter.width % 2 == 1 && anchor_x == filter.width / 2;
  const int radius = filter.width / 2;
  const int taps = filter.width * filter.height;
  const bool keep_alpha = r.options.keep_alpha;
  const bool dense_holds = r.dense && r.dense->holds && !keep_alpha;
  // `fast` has unrolled kernels for centred squares with the same pixel type in and out; it beats
  // every PMPP variant there. Mixed depths would get its slow generic kernel.
  const bool fast_compiled = centred_square && r.input_depth == r.output_depth;
  const bool rank_one = r.separable && (r.separable->fits_float_rank1 || r.separable->fits_double_rank1);

  // 8-bit rank-1 filters whose exact integer row sums keep the pass rule: `tensor` sums the rows on
  // tensor cores, and from radius 4 the columns too where that bound holds (the only rank-1 path
  // for radii 9-15); an alpha channel kept as it is leaves them to `fast`. Small radii only on
  // images from the row's size, and colour 5x5 ones on images up to the row's size.
  // Colour 5x5 filters on small images stay on `fast` (both rules below were measured on large ones).
  const bool small_colour_5x5 =
      taps <= 25 && r.channels > 1 && r.pixels() > 0 && r.pixels() < t.colour_5x5_tensor_min_pixels;
  const bool colour_5x5_on_tensor = radius == 2 && r.channels > 1 && r.pixels() > 0 &&
                                    r.pixels() <= t.tensor_rank1_colour_5x5_max_pixels && !small_colour_5x5;
  const bool rank1_on_tensor =
      fast_compiled && r.separable && r.input_depth == CV_8U && !keep_alpha &&
      (radius >= t.tensor_rank1_min_radius || r.pixels() >= t.tensor_rank1_small_min_pixels || colour_5x5_on_tensor) &&
      gpu::tensor_separable_supported(radius, r.separable->fits_tensor_split, r.separable->fits_tensor_mma_split);

  // Tiny images: where `fast` runs its tile kernel (one wave of small tiles, every input element
  // loaded once a block) it beats the tensor-core kernels the rules below choose for large images,
  // but for 8-bit rank-1 filters only while its dense sums stay few (`tensor`'s rank-1 sums hardly
  // grow with the filter).
  // 16-bit rank-1 filters `fast` owes double sums (gpu::fast_wide_runs) take its tile kernel only
  // under that kernel's double rule.
  const bool sums_in_double =
      r.separable && gpu::fast_wide_runs(r.input_depth == CV_16U && r.output_depth == CV_16U, filter.width,
                                         filter.height, r.channels, r.separable->fits_double_rank1);
  const long long row_elems = static_cast<long long>(r.width) * r.channels;
  if (t.tiny_images_on_fast && fast_compiled && row_elems <= std::numeric_limits<int>::max() &&
      gpu::fast_tile_runs(filter.width, filter.height, static_cast<int>(row_elems), r.height, sums_in_double) &&
      (!rank1_on_tensor ||
       (filter.width <= t.tiny_tile_rank1_max_side &&
        gpu::fast_tile_count(static_cast<int>(row_elems), r.height) * taps <= t.tiny_tile_rank1_max_tile_taps)))
    return Variant::fast;

  if (rank1_on_tensor) return Variant::tensor;
  const long long elements = r.pixels() * r.channels;
  // 16-bit filters `fast` sums densely (past the tile kernel above), from the row's taps, on
  // mid-size images: `tensor`'s digit sums, where their split holds.
  if (fast_compiled && dense_holds && r.input_depth == CV_16U && !sums_in_double && r.pixels() > 0 &&
      taps >= t.u16_mid_tensor_min_taps && taps <= t.u16_mid_tensor_max_taps &&
      elements >= t.u16_mid_tensor_min_elements && elements <= taps * t.u16_mid_tensor_elements_per_tap)
    return Variant::tensor;
  // 16-bit rank-1 filters `fast` would sum with its double separable kernel on the FMA units (past
  // the tile kernel above; one channel sums on the FP64 tensor cores): `tensor`'s digit sums where
  // the row measured them faster, where their split holds (its bound).
  const bool u16_rank1_on_tensor = !gpu::fast_wide_mma_runs(r.channels) &&
                                   std::max(filter.width, filter.height) >= t.u16_rank1_tensor_wide_side &&
                                   elements <= t.u16_rank1_tensor_wide_max_elements;
  if (fast_compiled && dense_holds && sums_in_double && r.pixels() > 0 && u16_rank1_on_tensor) return Variant::tensor;
  if (fast_compiled && radius >= 1 && radius <= kFastRank1MaxRadius && rank_one) return Variant::fast;

  // Other 8-bit filters up to 31x31 whose integer split keeps the pass rule: `tensor` sums them
  // densely on tensor cores past the row's taps for one channel or for colour images (past 17x17
  // on the planes kernel); on one channel the warpgroup kernel (compute capability 9.0) also takes
  // smaller ones on large images.
  if (dense_holds && r.input_depth == CV_8U &&
      ((taps > (r.channels > 1 ? t.dense_u8_colour_max_fast_taps : t.dense_u8_max_fast_taps) && !small_colour_5x5) ||
       (r.channels == 1 && taps > t.dense_u8_large_max_fast_taps && r.pixels() >= t.dense_u8_large_min_pixels &&
        runs_wgmma(device))))
    return Variant::tensor;

  // 16-bit filters up to 31x31 whose split keeps the integer rule: `tensor` sums their weights'
  // digits exactly on tensor cores from the row's taps on one channel, on colour images only past
  // `fast`'s unrolled kernels, and wherever `fast` has no unrolled kernel (`tiled-halo` would run
  // them, several times slower).
  const bool fast_unrolled = fast_compiled && radius <= kFastDenseMaxRadius;
  if (dense_holds && r.input_depth == CV_16U && ((taps >= t.dense_u16_min_taps && r.channels == 1) || !fast_unrolled))
    return Variant::tensor;
  // Float filters within fast's unrolled radii on one small channel, from the row's taps:
  // `tensor` (block floating point on tensor cores) where fast's grid leaves its last wave empty.
  if (dense_holds && r.input_depth == CV_32F && r.channels == 1 && taps >= t.dense_f32_small_min_taps &&
      r.pixels() > 0 && r.pixels() <= t.dense_f32_small_max_pixels)
    return Variant::tensor;
  if (fast_compiled && radius >= 1 && radius <= kFastDenseMaxRadius) return Variant::fast;

  // Float filters up to 31x31 whose split keeps the rule: `tensor` sums them in block floating
  // point on tensor cores from the row's taps.
  if (dense_holds && r.input_depth == CV_32F && taps >= t.dense_f32_min_taps) return Variant::tensor;

  // Large dense filters: overlap-save FFT, whose cost hardly grows with the filter. Integer
  // outputs only where `fft` sums the results near a rounding tie again (8-bit outputs of usual
  // filters), so ties round as in filter2D's direct sums; 16-bit outputs stay on direct sums
  // (src/gpu/launch/fft_ties.hpp).
  const bool fft_rounds_ties =
      r.output_depth == CV_32F ||
      gpu::fft_tie_margin(gpu::pixel_type_for_depth(r.input_depth), gpu::pixel_type_for_depth(r.output_depth),
                          filter.weights.data(), filter.weights.size()) > 0.0;
  if (fft_rounds_ties && taps >= t.fft_min_taps && gpu::cufft_api() != nullptr) return Variant::fft;

  // Other shapes: tiled-halo's shared tile reads fewer global values per output than the generic
  // fast kernel; it grows with the filter, and cached needs no more shared memory.
  if (gpu::shared_bytes_tiled_halo(filter.width, filter.height) > t.tiled_halo_max_shared_bytes) return Variant::cached;
  return Variant::tiled_halo;
}

}  // namespace cuconv::convolution
