// SPDX-License-Identifier: Apache-2.0
#pragma once
// Seams the tests plug into (the pattern of RMM's failure_callback_resource_adaptor): a fault
// injector the GPU layer asks before each device allocation and each variant launch, a launch
// observer it tells which kernel path ran (and asks whether a path may run, so the tests can
// compare two kernels on one input), poisoned outputs, forced strips and staging chunks. The product installs none and
// reads nothing from the environment: without one each hook is one atomic load of a null pointer. Internal: only the
// tests install them, for the whole process, before the work they watch.
#include <cuconv/convolve.hpp>  // Variant

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>

namespace cuconv::gpu {

/// Kernel paths a launch observer hears of: those a variant may take or leave silently (the
/// tests check which one ran), and the filter spectra `fft` computes (its cache of them).
enum class KernelPath {
  fast_tile,            ///< `fast`'s tile kernel for tiny images (kernels/fast_tile.cuh)
  fast_double_rank1,    ///< `fast`'s double-precision rank-1 kernel (kernels/fast_wide.cuh)
  tensor_rank1,         ///< `tensor`'s rank-1 kernel with FP32 column sums (kernels/tensor_separable.cuh)
  tensor_rank1_mma,     ///< `tensor`'s rank-1 kernel with both passes on tensor cores (tensor_separable_mma.cuh)
  tensor_dense,         ///< `tensor`'s 8-bit dense kernel (kernels/tensor_dense.cuh)
  tensor_dense_wgmma,   ///< the same on warpgroup MMAs (kernels/tensor_dense_wgmma.cuh)
  tensor_planes_f32,    ///< `tensor`'s dense planes kernel (kernels/tensor_dense_planes.cuh) on float,
  tensor_planes_u16,    ///< on 16-bit
  tensor_planes_u8,     ///< and on 8-bit images
  fft_filter_spectrum,  ///< `fft` computed a filter's spectrum (not one it kept)
};
inline constexpr int kKernelPaths = static_cast<int>(KernelPath::fft_filter_spectrum) + 1;

/// Faults a test plants where a healthy GPU cannot be made to fail on demand (out of memory, a
/// failed launch), to drive the error paths: an explicit variant's Error{gpu}, `auto`'s fallback.
class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  /// Before each device allocation of `bytes`: another status than cudaSuccess fails it as if
  /// cudaMalloc* had returned that status.
  [[nodiscard]] virtual cudaError_t before_allocation(std::size_t /*bytes*/) noexcept { return cudaSuccess; }
  /// Before each launch of `variant` (launch_variant): another status fails the launch with it.
  [[nodiscard]] virtual cudaError_t before_launch(Variant /*variant*/) noexcept { return cudaSuccess; }
};

/// What a test learns of the kernels that ran. Called from any thread that launches.
class LaunchObserver {
 public:
  virtual ~LaunchObserver() = default;
  /// Whether a launcher may take `path` where it has another way (false: it takes that one).
  [[nodiscard]] virtual bool allows(KernelPath /*path*/) noexcept { return true; }
  /// After each launch of `path`.
  virtual void launched(KernelPath /*path*/) noexcept {}
};

namespace seams {
inline std::atomic<FaultInjector*> fault_injector{nullptr};
inline std::atomic<LaunchObserver*> launch_observer{nullptr};
inline std::atomic<std::size_t> staging_chunk_bytes{0};
inline std::atomic<bool> poison_outputs{false};
inline std::atomic<int> max_strip_rows{0};
}  // namespace seams

/// Installs `injector` (nullptr: none) for the process; returns the one it replaces. Tests only:
/// the injector must outlive every GPU call made while it is installed.
inline FaultInjector* set_fault_injector(FaultInjector* injector) noexcept {
  return seams::fault_injector.exchange(injector);
}

/// Installs `observer` (nullptr: none) for the process; returns the one it replaces. Tests only.
inline LaunchObserver* set_launch_observer(LaunchObserver* observer) noexcept {
  return seams::launch_observer.exchange(observer);
}

/// Staged host copies in chunks of about `bytes` instead of the default (0: the default), so a
/// test sends small images through several chunks; returns the previous setting. Tests only.
inline std::size_t set_staging_chunk_bytes(std::size_t bytes) noexcept {
  return seams::staging_chunk_bytes.exchange(bytes);
}

/// Fills every GPU output with garbage before its kernel runs (NaN for float, 0xA5 bytes
/// otherwise), so a value a kernel never writes cannot pass; returns the previous setting. Tests only.
inline bool set_poison_outputs(bool poison) noexcept { return seams::poison_outputs.exchange(poison); }

/// Filters host images in strips of at most `rows` output rows (0: only the memory limit decides),
/// so small images exercise the strips; returns the previous setting. Tests only.
inline int set_max_strip_rows(int rows) noexcept { return seams::max_strip_rows.exchange(rows); }

/// Whether GPU outputs are poisoned (false without a test's setting).
[[nodiscard]] inline bool poison_outputs() noexcept { return seams::poison_outputs.load(std::memory_order_acquire); }

/// The forced strip height, 0 without a test's setting.
[[nodiscard]] inline int max_strip_rows() noexcept { return seams::max_strip_rows.load(std::memory_order_acquire); }

/// The installed injector's answer before an allocation of `bytes` (cudaSuccess without one).
[[nodiscard]] inline cudaError_t injected_allocation_fault(std::size_t bytes) noexcept {
  FaultInjector* injector = seams::fault_injector.load(std::memory_order_acquire);
  return injector != nullptr ? injector->before_allocation(bytes) : cudaSuccess;
}

/// The installed injector's answer before a launch of `variant` (cudaSuccess without one).
[[nodiscard]] inline cudaError_t injected_launch_fault(Variant variant) noexcept {
  FaultInjector* injector = seams::fault_injector.load(std::memory_order_acquire);
  return injector != nullptr ? injector->before_launch(variant) : cudaSuccess;
}

/// Whether `path` may run (true without an observer).
[[nodiscard]] inline bool launch_allowed(KernelPath path) noexcept {
  LaunchObserver* observer = seams::launch_observer.load(std::memory_order_acquire);
  return observer == nullptr || observer->allows(path);
}

/// Tells the installed observer, if any, that `path` ran.
inline void notify_launch(KernelPath path) noexcept {
  if (LaunchObserver* observer = seams::launch_observer.load(std::memory_order_acquire)) observer->launched(path);
}

}  // namespace cuconv::gpu
