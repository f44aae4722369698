// SPDX-License-Identifier: Apache-2.0
// Launcher of `tensor`'s dense kernel on Hopper's warpgroup MMAs (kernels/tensor_dense_wgmma.cuh):
// one-channel 8-bit images with sides up to 17, on a GPU of compute capability 9.0 (the kernel is
// built for sm_90a only), input rows 16-byte aligned (the tensor memory accelerator's rule). The
// 8-bit dense kernel of launch_tensor.cu runs every other case; both give the same bits.
#include "filter/splits.hpp"
#include "gpu/launch/dispatch.cuh"  // LaunchArgs, reserve_shared_memory
#include "gpu/launch/tensor_dense_taps.cuh"
#include "gpu/launch/tensor_wgmma_plan.cuh"
#include "gpu/seams.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>

namespace cuconv::gpu {

namespace {

static_assert(filter::kTensorDenseMaxSide == kernels::kWgmmaMaxSide);

using WgmmaKernel = void (*)(kernels::PlaneView<const std::uint8_t>, kernels::PlaneView<std::uint8_t>,
                             kernels::ConvParams, kernels::TensorDenseTaps, const CUtensorMap, bool);

/// The kernel for kh rows (1..17) and wgmma_shifted(anchor_x), one instantiation each.
template <std::size_t... I>
constexpr auto wgmma_kernel_table(std::index_sequence<I...>) {
  return std::array<WgmmaKernel, 2 * sizeof...(I)>{
      kernels::tensor_dense_wgmma_kernel<static_cast<int>(I) + 1, false>...,
      kernels::tensor_dense_wgmma_kernel<static_cast<int>(I) + 1, true>...};
}
constexpr auto kWgmmaKernels = wgmma_kernel_table(std::make_index_sequence<kernels::kWgmmaMaxSide>{});

}  // namespace

bool device_runs_wgmma() {
  static std::array<std::atomic<int>, 64> cached{};
  return cached_device_answer(cached, [](int device) {
    int major = 0, minor = 0;
    CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major != 9 || minor != 0) return false;
    cudaFuncAttributes attributes{};
    const bool image = cudaFuncGetAttributes(&attributes, kWgmmaKernels[0]) == cudaSuccess;
    (void)cudaGetLastError();  // a missing kernel image is the answer here, not an error to keep
    return image;
  });
}

bool launch_tensor_dense_wgmma(const LaunchArgs& a, const filter::DenseTensorSplit& split) {
  using namespace kernels;
  const int kw = a.params.kw;
  const int kh = a.params.kh;
  const bool rows_aligned = reinterpret_cast<std::uintptr_t>(a.src.data) % 16 == 0 && a.src.pitch % 16 == 0;
  if (!launch_allowed(KernelPath::tensor_dense_wgmma) || a.channels != 1 || kw > kWgmmaMaxSide || kh > kWgmmaMaxSide ||
      !rows_aligned || !device_runs_wgmma())
    return false;
  CUtensorMap map{};
  if (!wgmma_source_map(map, a.src.data, a.src.pitch, a.width, a.height, kh)) return false;

  const TensorDenseTaps taps = dense_taps_for(split, kw, kh);
  const WgmmaKernel kernel =
      kWgmmaKernels[static_cast<std::size_t>((wgmma_shifted(a.params.anchor_x) ? kWgmmaMaxSide : 0) + kh - 1)];
  const int shared = wgmma_shared_bytes(kh);
  reserve_shared_memory(kernel, static_cast<std::size_t>(shared), "tensor", kw, kh);
  const dim3 grid = wgmma_grid(a.width, a.height);
  const bool vector_aligned = reinterpret_cast<std::uintptr_t>(a.dst.data) % 16 == 0 && a.dst.pitch % 16 == 0;
  PlaneView<const std::uint8_t> src{static_cast<const std::uint8_t*>(a.src.data), a.src.pitch, a.width, a.height};
  PlaneView<std::uint8_t> dst{static_cast<std::uint8_t*>(a.dst.data), a.dst.pitch, a.width, a.height};
  kernel<<<grid, dim3(kWgmmaThreads), static_cast<std::size_t>(shared), a.stream>>>(src, dst, a.params, taps, map,
                                                                                    vector_aligned);
  CUCONV_CHECK_LAUNCH();
  notify_launch(KernelPath::tensor_dense_wgmma);
  return true;
}

}  // namespace cuconv::gpu
