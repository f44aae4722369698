// SPDX-License-Identifier: Apache-2.0
// Launcher of the `fft` variant (kernels/fft.cuh): overlap-save tiles, batched cuFFT transforms.
// Device memory beyond input and output: one batch of tiles, sized to at most the input's own
// bytes in float (and at least one tile), stream-ordered; cuFFT's work area; and the spectra of
// the thread's last few filters (one tile each, kept between calls). With tie repairs on, the
// batch's allocation also holds the repair list: 8 bytes per 32 outputs of a batch (about 6% of
// the tiles' bytes).
#include "gpu/launch/cufft_api.hpp"
#include "gpu/launch/dispatch.cuh"
#include "gpu/launch/fft_ties.hpp"
#include "gpu/launch/occupancy.cuh"
#include "gpu/memory/device_memory.hpp"
#include "gpu/seams.hpp"

#include <kernels/fft.cuh>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace cuconv::gpu {

namespace {

/// cuFFT plans of this thread, kept for the life of the process: creating one costs far more than
/// running it, and a batch run reuses the same few sizes. Per thread, because a plan's stream is
/// part of its state.
cufftHandle cached_plan(const CufftApi& api, int fft_w, int fft_h, int batch, cufftType type, cudaStream_t stream) {
  struct Key {
    int fft_w, fft_h, batch;
    cufftType type;
    bool operator==(const Key&) const = default;
  };
  constexpr std::size_t kMaxPlans = 8;  // plans hold work areas: keep only the recent sizes
  thread_local std::vector<std::pair<Key, cufftHandle>> plans;
  const Key key{fft_w, fft_h, batch, type};
  auto found = std::find_if(plans.begin(), plans.end(), [&](const auto& p) { return p.first == key; });
  if (found == plans.end()) {
    if (plans.size() == kMaxPlans) {
      api.destroy(plans.front().second);  // frees its work area (cudaFree waits for the device)
      plans.erase(plans.begin());
    }
    int n[2] = {fft_h, fft_w};  // slowest dimension first
    int real_embed[2] = {fft_h, 2 * (fft_w / 2 + 1)};
    int complex_embed[2] = {fft_h, fft_w / 2 + 1};
    const int real_dist = real_embed[0] * real_embed[1];
    const int complex_dist = complex_embed[0] * complex_embed[1];
    const bool forward = type == CUFFT_R2C;
    cufftHandle handle = 0;
    check_cufft(
        api.plan_many(&handle, 2, n, forward ? real_embed : complex_embed, 1, forward ? real_dist : complex_dist,
                      forward ? complex_embed : real_embed, 1, forward ? complex_dist : real_dist, type, batch),
        "cufftPlanMany");
    found = plans.insert(plans.end(), {key, handle});
  }
  check_cufft(api.set_stream(found->second, stream), "cufftSetStream");
  return found->second;
}

/// The spectrum of `a`'s filter zero-padded to one t.fft_w x t.fft_h tile (cuFFT's in-place real
/// layout), kept per thread for its last few filters, so that a run of many images with one
/// filter transforms it once. An entry serves only the same device, filter size, tile size and
/// weights bit for bit, so a changed filter never meets a stale spectrum. Ready for `a.stream`
/// on return: one built on another stream is waited for through its event.
const cuFloatComplex* cached_filter_spectrum(const CufftApi& api, const LaunchArgs& a, const kernels::FftTiling& t) {
  struct Entry {
    int device, kw, kh, fft_w, fft_h;
    std::vector<float> weights;
    DeviceBuffer spectrum;
    CudaEvent ready;
  };
  constexpr std::size_t kMaxSpectra = 4;  // one tile each (at most 4 MiB): keep only the recent filters
  thread_local std::vector<std::unique_ptr<Entry>> entries;  // least recently used first
  int device = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  const std::size_t taps = static_cast<std::size_t>(a.params.kw) * static_cast<std::size_t>(a.params.kh);
  const auto found = std::find_if(entries.begin(), entries.end(), [&](const std::unique_ptr<Entry>& e) {
    return e->device == device && e->kw == a.params.kw && e->kh == a.params.kh && e->fft_w == t.fft_w &&
           e->fft_h == t.fft_h && std::memcmp(e->weights.data(), a.weights.host, sizeof(float) * taps) == 0;
  });
  if (found != entries.end()) {
    std::rotate(found, found + 1, entries.end());  // now the most recently used
    CUCONV_CUDA_TRY(cudaStreamWaitEvent(a.stream, entries.back()->ready.get(), 0));
    return static_cast<const cuFloatComplex*>(entries.back()->spectrum.data());
  }

  const std::size_t tile_floats = static_cast<std::size_t>(t.fft_h) * static_cast<std::size_t>(t.real_pitch);
  std::vector<float> padded(tile_floats, 0.0f);
  for (int i = 0; i < a.params.kh; ++i)
    for (int j = 0; j < a.params.kw; ++j)
      padded[static_cast<std::size_t>(i) * t.real_pitch + j] = a.weights.host[i * a.params.kw + j];
  auto entry = std::make_unique<Entry>(Entry{device, a.params.kw, a.params.kh, t.fft_w, t.fft_h,
                                             std::vector<float>(a.weights.host, a.weights.host + taps),
                                             DeviceBuffer(sizeof(float) * tile_floats), CudaEvent()});
  // `padded` is pageable host memory: cudaMemcpyAsync has copied it before returning.
  CUCONV_CUDA_TRY(cudaMemcpyAsync(entry->spectrum.data(), padded.data(), sizeof(float) * tile_floats,
                                  cudaMemcpyHostToDevice, a.stream));
  check_cufft(
      api.exec_r2c(cached_plan(api, t.fft_w, t.fft_h, 1, CUFFT_R2C, a.stream),
                   static_cast<cufftReal*>(entry->spectrum.data()), static_cast<cufftComplex*>(entry->spectrum.data())),
      "cufftExecR2C (filter)");
  entry->ready.record(a.stream);
  if (entries.size() == kMaxSpectra) entries.erase(entries.begin());  // cudaFree waits for its last use
  entries.push_back(std::move(entry));
  notify_launch(KernelPath::fft_filter_spectrum);
  return static_cast<const cuFloatComplex*>(entries.back()->spectrum.data());
}

int grid_for(long long items) {
  return static_cast<int>(std::min<long long>((items + kernels::kFftThreads - 1) / kernels::kFftThreads, 65536));
}

}  // namespace

int fft_tile_side(int k, int image_side) {
  const int preferred = k <= 48 ? 512 : 1024;  // valid part >= 88% (77% at 127) of each side
  // A narrow side: the smallest power of two that holds it plus its halo, at least 2k.
  int fit = 16;
  while (fit < preferred && (fit < image_side + k - 1 || fit < 2 * k)) fit *= 2;  // no overflow near 2^31
  return std::min(preferred, fit);
}

void launch_fft(const LaunchArgs& a) {
  using namespace kernels;
  std::string reason;
  const CufftApi* api = cufft_api(&reason);
  if (api == nullptr) throw Error(ErrorKind::gpu, "variant fft: " + reason + " (use `variant` fast or auto)");

  FftTiling t{};
  t.fft_w = fft_tile_side(a.params.kw, a.width);
  t.fft_h = fft_tile_side(a.params.kh, a.height);
  t.real_pitch = 2 * (t.fft_w / 2 + 1);
  t.valid_x = t.fft_w - a.params.kw + 1;
  t.valid_y = t.fft_h - a.params.kh + 1;
  t.tiles_x = div_up(a.width, t.valid_x);
  t.tiles_y = div_up(a.height, t.valid_y);
  t.channels = a.channels;
  t.tiles = static_cast<long long>(t.tiles_x) * t.tiles_y * t.channels;

  const std::size_t tile_floats = static_cast<std::size_t>(t.fft_h) * static_cast<std::size_t>(t.real_pitch);
  const std::size_t input_floats = static_cast<std::size_t>(a.width) * a.height * a.channels;
  // At most the input's floats per pass, and passes of equal size: a last pass of a few real
  // tiles would otherwise gather, transform and scatter a whole batch of empty ones
  // (bench/results/kernel-notes/fft.md, 'Passes of equal size').
  const long long largest_batch = std::clamp<long long>(static_cast<long long>(input_floats / tile_floats), 1, t.tiles);
  const long long passes = div_up(t.tiles, largest_batch);
  const long long batch = div_up(t.tiles, passes);

  const cuFloatComplex* filter_spectrum = cached_filter_spectrum(*api, a, t);
  // Results this close to a rounding tie are summed again directly (src/gpu/launch/fft_ties.hpp).
  const auto tie_margin =
      static_cast<float>(fft_tie_margin(a.src.type, a.dst.type, a.weights.host,
                                        static_cast<std::size_t>(a.params.kw) * static_cast<std::size_t>(a.params.kh)));
  // Outputs of one batch that fall in the margin, for fft_repair_ties.
  const long long batch_outputs = static_cast<long long>(t.valid_x) * t.valid_y * batch;
  const long long repair_capacity = tie_margin > 0.0f ? fft_repair_capacity(batch_outputs) : 0;
  const std::size_t tile_bytes = sizeof(float) * tile_floats * static_cast<std::size_t>(batch);  // a multiple of 8
  const std::size_t repair_bytes =
      repair_capacity > 0 ? sizeof(unsigned long long) + sizeof(long long) * static_cast<std::size_t>(repair_capacity)
                          : 0;
  const StreamScratch tiles(tile_bytes + repair_bytes, a.stream);
  FftRepairList repairs{};
  if (repair_capacity > 0) {
    repairs.count = reinterpret_cast<unsigned long long*>(static_cast<char*>(tiles.data()) + tile_bytes);
    repairs.outputs = reinterpret_cast<long long*>(repairs.count + 1);
    repairs.capacity = repair_capacity;
  }
  const cufftHandle forward = cached_plan(*api, t.fft_w, t.fft_h, static_cast<int>(batch), CUFFT_R2C, a.stream);
  const cufftHandle inverse = cached_plan(*api, t.fft_w, t.fft_h, static_cast<int>(batch), CUFFT_C2R, a.stream);
  auto* real = static_cast<float*>(tiles.data());
  auto* spectra = static_cast<cuFloatComplex*>(tiles.data());
  const long long bins_per_tile = static_cast<long long>(t.fft_h) * (t.fft_w / 2 + 1);
  const float scale = 1.0f / (static_cast<float>(t.fft_w) * static_cast<float>(t.fft_h));

  dispatch_types(a.src.type, a.dst.type, [&](auto pair) {
    using Pair = decltype(pair);
    const auto src = source_view<Pair>(a);
    const auto dst = destination_view<Pair>(a);
    using In = typename Pair::in;
    using Out = typename Pair::out;
    for (long long first = 0; first < t.tiles; first += batch) {
      const long long samples = static_cast<long long>(t.fft_h) * t.real_pitch * batch;
      fft_gather_tiles<In>
          <<<grid_for(samples), kFftThreads, 0, a.stream>>>(src, a.params, t, first, static_cast<int>(batch), real);
      CUCONV_CHECK_LAUNCH();
      check_cufft(api->exec_r2c(forward, real, reinterpret_cast<cufftComplex*>(spectra)), "cufftExecR2C");
      fft_multiply_spectra<<<grid_for(bins_per_tile * batch), kFftThreads, 0, a.stream>>>(
          spectra, filter_spectrum, bins_per_tile, bins_per_tile * batch, scale);
      CUCONV_CHECK_LAUNCH();
      check_cufft(api->exec_c2r(inverse, reinterpret_cast<cufftComplex*>(spectra), real), "cufftExecC2R");
      if (repair_capacity > 0) CUCONV_CUDA_TRY(cudaMemsetAsync(repairs.count, 0, sizeof(unsigned long long), a.stream));
      fft_scatter_tiles<In, Out><<<grid_for(batch_outputs), kFftThreads, 0, a.stream>>>(
          real, src, dst, a.params, t, first, static_cast<int>(batch), a.keep_alpha, a.weights.device, tie_margin,
          repairs);
      CUCONV_CHECK_LAUNCH();
      if constexpr (std::is_integral_v<Out>) {
        if (repair_capacity == 0) continue;
        // The list's length is on the device: a grid that fills the GPU once, each thread striding.
        const int blocks = std::min(resident_blocks<fft_repair_ties<In, Out>>(kFftThreads), grid_for(repair_capacity));
        fft_repair_ties<In, Out>
            <<<blocks, kFftThreads, 0, a.stream>>>(src, dst, a.params, t, first, a.weights.device, repairs);
        CUCONV_CHECK_LAUNCH();
      }
    }
  });
}

}  // namespace cuconv::gpu
