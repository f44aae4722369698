#pragma once
// GpuWorkspace's state: the stream, timing events, device planes and pinned staging buffers one
// convolve() call uses. A call without a workspace makes a fresh state (`kept` false) that lives
// for that call; a GpuWorkspace keeps one (`kept` true) whose buffers only grow.
#include "gpu/device_memory.hpp"

#include <cuconv/convolve.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace cuconv::detail {

/// The four points that split a GPU run into upload, kernels and download times.
struct StageEvents {
  CudaEvent upload_start, upload_done, kernels_done, download_done;
  [[nodiscard]] StageTimes times() const {
    return {CudaEvent::elapsed_ms(upload_start, upload_done), CudaEvent::elapsed_ms(upload_done, kernels_done),
            CudaEvent::elapsed_ms(kernels_done, download_done)};
  }
};

}  // namespace cuconv::detail

namespace cuconv {

struct GpuWorkspace::State {
  explicit State(bool kept_between_calls) : kept(kept_between_calls) {}
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State();

  /// Binds the state to the calling thread's current device; memory held on another device is
  /// released first.
  void bind_to_current_device();

  /// `rows` rows of `row_bytes` in slot `slot`. A call's own state allocates each plane with
  /// cudaMallocPitch; a kept one holds one linear allocation per slot, reallocated (to the exact
  /// size, which the strip plan fitted to the memory limit) only when a plane does not fit, so
  /// planes of varying shapes reuse it.
  [[nodiscard]] detail::PlaneView plane(std::size_t slot, std::size_t row_bytes, std::size_t rows);
  /// Before one call's plane() calls: slot i will hold `rows` rows of `row_bytes[i]`. Where
  /// growing some slots while others stay larger than this call needs would hold more than
  /// `limit` bytes in all, the larger ones are freed, so every slot is allocated to fit exactly.
  void fit_planes(const std::vector<std::size_t>& row_bytes, std::size_t rows, std::uint64_t limit) noexcept;
  /// Frees the planes in slots from `slots` on, for a call that needs their memory.
  void keep_planes(std::size_t slots) noexcept;
  /// Bytes held by the planes in slots from `slots` on.
  [[nodiscard]] std::uint64_t device_bytes_from_slot(std::size_t slots) const noexcept;
  /// `weights` on the device (copied on `stream`).
  [[nodiscard]] const float* upload_weights(const std::vector<float>& weights, cudaStream_t stream);
  /// Pinned host memory of at least `bytes` in slot `slot` (kept states only stage copies).
  [[nodiscard]] detail::PinnedBuffer& staging(std::size_t slot, std::size_t bytes);
  /// Event `index` of those marking chunks of a staged download.
  [[nodiscard]] detail::CudaEvent& chunk_event(std::size_t index);

  [[nodiscard]] cudaStream_t stream();
  [[nodiscard]] bool has_stream() const noexcept { return stream_.has_value(); }
  [[nodiscard]] detail::StageEvents& events();

  [[nodiscard]] std::uint64_t device_bytes() const noexcept;
  [[nodiscard]] std::uint64_t pinned_bytes() const noexcept;

  /// Frees everything (on the device the memory is on).
  void release() noexcept;

  const bool kept;
  int device = -1;
  std::uint64_t allocations = 0;

 private:
  std::optional<detail::CudaStream> stream_;
  std::optional<detail::StageEvents> events_;
  std::vector<detail::CudaEvent> chunk_events_;
  std::vector<detail::DevicePlane> pitched_planes_;  ///< a call's own state
  std::vector<detail::DeviceBuffer> kept_planes_;    ///< a kept state
  detail::DeviceBuffer weights_;
  std::vector<detail::PinnedBuffer> staging_;
};

}  // namespace cuconv
