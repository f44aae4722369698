// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file fft.cuh
/// `fft`: overlap-save convolution for large filters. The image is cut into tiles of W x H input
/// samples (powers of two chosen per side by fft_tile_side: 512 or 1024 by filter size, smaller
/// for a narrow side; the halo included, border rule applied while gathering) whose valid part,
/// (W - kw + 1) x (H - kh + 1) outputs, tiles the output. Each tile is transformed (cuFFT, batched),
/// multiplied by the conjugate spectrum of the zero-padded filter (correlation, as filter2D), and
/// transformed back. Work per output grows with log T, not with kw * kh.
#include "common.cuh"

#include <cuComplex.h>

namespace cuconv::kernels {

inline constexpr int kFftThreads = 256;

/// Geometry of one overlap-save pass over an interleaved image.
struct FftTiling {
  int fft_w;       ///< tile columns (a power of two)
  int fft_h;       ///< tile rows (a power of two)
  int real_pitch;  ///< floats per tile row in the in-place real layout: 2 * (fft_w / 2 + 1)
  int valid_x;     ///< outputs per tile along x: fft_w - kw + 1
  int valid_y;     ///< ... along y: fft_h - kh + 1
  int tiles_x;     ///< tiles per channel along x
  int tiles_y;
  int channels;
  long long tiles;  ///< tiles_x * tiles_y * channels
};

/// Tile index -> (channel, tile column, tile row): channels vary fastest.
__device__ __forceinline__ void tile_position(const FftTiling& t, long long tile, int& channel, int& tx, int& ty) {
  channel = static_cast<int>(tile % t.channels);
  const long long cell = tile / t.channels;
  tx = static_cast<int>(cell % t.tiles_x);
  ty = static_cast<int>(cell / t.tiles_x);
}

/// Thread i of the grid-stride loop writes float i of the batch's real layout (tile b, row v,
/// column u < real_pitch): the input at (tile origin - anchor + (u, v)) through the border rule;
/// the row padding (u >= fft_w) and tiles past the last one are zero.
template <class In>
__global__ void __launch_bounds__(kFftThreads)
    fft_gather_tiles(PlaneView<const In> src, ConvParams p, FftTiling t, long long first_tile, int batch,
                     float* __restrict__ tiles) {
  const long long per_tile = static_cast<long long>(t.fft_h) * t.real_pitch;
  const long long total = per_tile * batch;
  for (long long i = static_cast<long long>(blockIdx.x) * kFftThreads + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * kFftThreads) {
    const int b = static_cast<int>(i / per_tile);
    const int v = static_cast<int>((i % per_tile) / t.real_pitch);
    const int u = static_cast<int>(i % t.real_pitch);
    float value = 0.0f;
    if (first_tile + b < t.tiles && u < t.fft_w) {
      int channel, tx, ty;
      tile_position(t, first_tile + b, channel, tx, ty);
      value =
          load_element(src, ty * t.valid_y - p.anchor_y + v, tx * t.valid_x - p.anchor_x + u, channel, t.channels, p);
    }
    tiles[i] = value;
  }
}

/// Thread i multiplies spectrum value i of the batch by the conjugate filter spectrum (same bin
/// of every tile) and the 1 / (W * H) the inverse transform leaves out.
__global__ void __launch_bounds__(kFftThreads)
    fft_multiply_spectra(cuFloatComplex* __restrict__ spectra, const cuFloatComplex* __restrict__ filter_spectrum,
                         long long bins_per_tile, long long total, float scale) {
  for (long long i = static_cast<long long>(blockIdx.x) * kFftThreads + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * kFftThreads) {
    const cuFloatComplex f = filter_spectrum[i % bins_per_tile];
    const cuFloatComplex s = spectra[i];
    // s * conj(f): correlation, not convolution
    spectra[i] = make_cuFloatComplex((s.x * f.x + s.y * f.y) * scale, (s.y * f.x - s.x * f.y) * scale);
  }
}

/// The direct sum of output element (x, channel) of row y: delta, then every tap in filter
/// row-major order by fmaf, the order and rounding of the direct variants (basic, fast); `fft`
/// takes it for results near a rounding tie (fft_scatter_tiles).
template <class In>
__device__ __noinline__ float fft_direct_sum(const PlaneView<const In>& src, int x, int y, int channel, int channels,
                                             const ConvParams& p, const float* __restrict__ weights) {
  float acc = p.delta;
  if (window_inside(x, y, p.kw, p.kh, src.width, src.height, p)) {
    // The common case: plain loads, no border rule per tap (a repaired lane holds up its warp).
    const long long first_element = static_cast<long long>(x - p.anchor_x) * channels + channel;
    for (int i = 0; i < p.kh; ++i) {
      const In* in = src.row(y - p.anchor_y + i) + first_element;
      const float* row_weights = weights + i * p.kw;
#pragma unroll 4
      for (int j = 0; j < p.kw; ++j)
        acc = fmaf(__ldg(row_weights + j), static_cast<float>(__ldg(in + j * channels)), acc);
    }
    return acc;
  }
  for (int i = 0; i < p.kh; ++i)
    for (int j = 0; j < p.kw; ++j)
      acc = fmaf(__ldg(weights + i * p.kw + j),
                 load_element(src, y - p.anchor_y + i, x - p.anchor_x + j, channel, channels, p), acc);
  return acc;
}

/// Results near a rounding tie that fft_scatter_tiles leaves to fft_repair_ties: batch-local
/// output indices, appended in any order. A repair is a kw x kh direct sum; summed in the scatter,
/// one repaired lane held up its warp for all of it, while the list lets full warps do them
/// (bench/results/kernel-notes/fft.md, 'Repair list').
struct FftRepairList {
  unsigned long long* count;  ///< entries appended in this batch (may pass capacity: those were summed in place)
  long long* outputs;         ///< capacity slots
  long long capacity;
};

/// Batch-local output index i -> image position: tile b, row v < valid_y, column u < valid_x.
struct FftOutput {
  int b, u, v;        ///< tile of the batch, column and row in its valid part
  int x, y, channel;  ///< image position
};
__device__ __forceinline__ FftOutput fft_output_position(const FftTiling& t, long long first_tile, long long i) {
  const long long per_tile = static_cast<long long>(t.valid_x) * t.valid_y;
  FftOutput o;
  o.b = static_cast<int>(i / per_tile);
  o.v = static_cast<int>((i % per_tile) / t.valid_x);
  o.u = static_cast<int>(i % t.valid_x);
  int tx, ty;
  tile_position(t, first_tile + o.b, o.channel, tx, ty);
  o.x = tx * t.valid_x + o.u;
  o.y = ty * t.valid_y + o.v;
  return o;
}

/// Thread i takes valid output i of the batch (tile b, row v < valid_y, column u < valid_x) to
/// the image, adding delta and rounding; alpha (channel 3 with keep_alpha) is copied instead.
/// Integer outputs whose transform value lies within `tie_margin` of a rounding boundary n + 1/2
/// (and could round to a value inside Out's range) are summed again directly (fft_direct_sum), so
/// ties round half to even as in the direct variants; tie_margin = 0 turns that off
/// (src/gpu/launch/fft_ties.hpp). Such an output goes to `repairs` and is left unwritten here; when the
/// list is full it is summed in this thread instead.
template <class In, class Out>
__global__ void __launch_bounds__(kFftThreads)
    fft_scatter_tiles(const float* __restrict__ tiles, PlaneView<const In> src, PlaneView<Out> dst, ConvParams p,
                      FftTiling t, long long first_tile, int batch, bool keep_alpha, const float* __restrict__ weights,
                      float tie_margin, FftRepairList repairs) {
  // The last pass may hold fewer real tiles than the batch; the loop stops before the empty ones.
  const long long real_tiles = min(static_cast<long long>(batch), t.tiles - first_tile);
  const long long total = static_cast<long long>(t.valid_x) * t.valid_y * real_tiles;
  for (long long i = static_cast<long long>(blockIdx.x) * kFftThreads + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * kFftThreads) {
    const FftOutput o = fft_output_position(t, first_tile, i);
    if (o.x >= dst.width || o.y >= dst.height) continue;
    const long long element = static_cast<long long>(o.x) * t.channels + o.channel;
    const bool alpha = keep_alpha && o.channel == 3;
    float value = alpha ? static_cast<float>(src.row(o.y)[element])
                        : tiles[(static_cast<long long>(o.b) * t.fft_h + o.v) * t.real_pitch + o.u] + p.delta;
    if constexpr (std::is_integral_v<Out>) {
      constexpr float kLowest = static_cast<float>(std::numeric_limits<Out>::min()) - 1.0f;
      constexpr float kHighest = static_cast<float>(std::numeric_limits<Out>::max()) + 1.0f;
      if (!alpha && value > kLowest && value < kHighest && fabsf(value - floorf(value) - 0.5f) < tie_margin) {
        const unsigned long long slot = atomicAdd(repairs.count, 1ull);
        if (slot < static_cast<unsigned long long>(repairs.capacity)) {
          repairs.outputs[slot] = i;
          continue;
        }
        value = fft_direct_sum(src, o.x, o.y, o.channel, t.channels, p, weights);
      }
    }
    dst.row(o.y)[element] = saturate_from_float<Out>(value);
  }
}

/// Thread j of the grid-stride loop writes listed output j (fft_scatter_tiles) as its direct sum.
/// The grid is sized to the device, not to the list, whose length only the device knows.
template <class In, class Out>
__global__ void __launch_bounds__(kFftThreads)
    fft_repair_ties(PlaneView<const In> src, PlaneView<Out> dst, ConvParams p, FftTiling t, long long first_tile,
                    const float* __restrict__ weights, FftRepairList repairs) {
  const long long listed =
      static_cast<long long>(min(*repairs.count, static_cast<unsigned long long>(repairs.capacity)));
  for (long long j = static_cast<long long>(blockIdx.x) * kFftThreads + threadIdx.x; j < listed;
       j += static_cast<long long>(gridDim.x) * kFftThreads) {
    const FftOutput o = fft_output_position(t, first_tile, repairs.outputs[j]);
    const float value = fft_direct_sum(src, o.x, o.y, o.channel, t.channels, p, weights);
    dst.row(o.y)[static_cast<long long>(o.x) * t.channels + o.channel] = saturate_from_float<Out>(value);
  }
}

}  // namespace cuconv::kernels
