// SPDX-License-Identifier: Apache-2.0
#pragma once
// GpuWorkspace's state (gpu::WorkspaceState, opaque in the public header): the stream, timing events, device planes and
// pinned staging buffers one convolve() call uses. A call without a workspace makes a fresh state (`kept` false) that
// lives for that call; a GpuWorkspace keeps one (`kept` true) whose buffers only grow.
#include "gpu/memory/device_memory.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/device_image.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace cuconv::gpu {

/// The four points that split a GPU run into upload, kernels and download times.
struct StageEvents {
  CudaEvent upload_start, upload_done, kernels_done, download_done;
  [[nodiscard]] StageTimes times() const {
    return {CudaEvent::elapsed_ms(upload_start, upload_done), CudaEvent::elapsed_ms(upload_done, kernels_done),
            CudaEvent::elapsed_ms(kernels_done, download_done)};
  }
};

struct WorkspaceState {
  explicit WorkspaceState(bool kept_between_calls) : kept(kept_between_calls) {}
  WorkspaceState(const WorkspaceState&) = delete;
  WorkspaceState& operator=(const WorkspaceState&) = delete;
  ~WorkspaceState();

  /// Binds the state to the calling thread's current device; memory held on another device is
  /// released first.
  void bind_to_current_device();

  /// Slot `slot`'s device image of `height` rows of `width` pixels of `channels` values of
  /// `depth`. A call's own state allocates each with cudaMallocPitch; a kept one holds one linear
  /// allocation per slot, reallocated (to the exact size, which the strip plan fitted to the memory
  /// limit) only when an image does not fit, so images of varying shapes reuse it.
  [[nodiscard]] DeviceImageView image(std::size_t slot, int width, int height, int channels, int depth);
  /// The one memory rule, before a call's image() calls: slot i will hold `rows` rows of
  /// `row_bytes[i]`, `needed` bytes in all with the call's other buffers, and what stays held
  /// must fit `limit`. Slots past the call's are freed first (when `needed` and they pass the
  /// limit together), then the call's slots that are larger than it needs (when keeping them while
  /// growing the others would pass it), so that every slot is allocated to fit exactly.
  void fit_planes(const std::vector<std::size_t>& row_bytes, std::size_t rows, std::uint64_t needed,
                  std::uint64_t limit) noexcept;
  /// The automatic device memory limit, found once per kept state and device (0: not yet).
  std::uint64_t automatic_limit = 0;
  /// `weights` on the device for the work queued next on `stream`, with no host wait: the kept
  /// buffer as it is when it holds these weights (ordered after their store when that was queued
  /// on another stream), else the buffer refilled in stream order, after every use queued so far
  /// on any stream, by a kernel that carries the weights as its argument (no host buffer must
  /// outlive the call, and a copy from pageable memory may wait for the stream). The buffer comes
  /// from the stream-ordered pool and grows only for more weights. weights_read(stream) must
  /// follow the work that reads them.
  [[nodiscard]] const float* device_weights(const std::vector<float>& weights, cudaStream_t stream);
  /// Marks the weights as read by all work queued on `stream` so far: a later refill or release
  /// on any stream waits for it on the device.
  void weights_read(cudaStream_t stream);
  /// Pinned host memory of at least `bytes` in slot `slot` (kept states only stage copies).
  [[nodiscard]] gpu::PinnedBuffer& staging(std::size_t slot, std::size_t bytes);
  /// Event `index` of those marking chunks of a staged download.
  [[nodiscard]] gpu::CudaEvent& chunk_event(std::size_t index);

  [[nodiscard]] cudaStream_t stream();
  [[nodiscard]] bool has_stream() const noexcept { return stream_.has_value(); }
  [[nodiscard]] gpu::StageEvents& events();

  [[nodiscard]] std::uint64_t device_bytes() const noexcept;
  [[nodiscard]] std::uint64_t pinned_bytes() const noexcept;

  /// Frees everything (on the device the memory is on).
  void release() noexcept;

  const bool kept;
  int device = -1;
  std::uint64_t allocations = 0;

 private:
  std::optional<gpu::CudaStream> stream_;
  std::optional<gpu::StageEvents> events_;
  std::vector<gpu::CudaEvent> chunk_events_;
  std::vector<DeviceImage> pitched_planes_;     ///< a call's own state
  std::vector<gpu::DeviceBuffer> kept_planes_;  ///< a kept state

  /// Bytes held by the images in slots from `slots` on.
  [[nodiscard]] std::uint64_t device_bytes_from_slot(std::size_t slots) const noexcept;

  /// The filter weights on the device (device_weights): what they hold, where and when they were
  /// stored, and an event after the last work that read them on each stream that did.
  struct KeptWeights {
    std::vector<float> values;
    float* device = nullptr;
    std::size_t capacity = 0;  ///< bytes
    cudaStream_t stored_on = nullptr;
    std::optional<gpu::CudaEvent> stored;
    std::vector<std::pair<cudaStream_t, gpu::CudaEvent>> reads;
  };
  KeptWeights weights_;
  /// Makes `stream` wait (on the device) for every read of the kept weights queued so far.
  void wait_for_weight_reads(cudaStream_t stream);
  /// Frees the kept weights in stream order on `stream`, after their last reads.
  void release_weights(cudaStream_t stream) noexcept;
  std::vector<gpu::PinnedBuffer> staging_;
};

/// The state inside a GpuWorkspace, which the public header keeps opaque (a moved-from workspace
/// gets a fresh one).
struct WorkspaceAccess {
  [[nodiscard]] static WorkspaceState& state(GpuWorkspace& workspace);
};

[[nodiscard]] inline WorkspaceState& workspace_state(GpuWorkspace& workspace) {
  return WorkspaceAccess::state(workspace);
}

}  // namespace cuconv::gpu
