// SPDX-License-Identifier: Apache-2.0
// GpuWorkspace: buffers kept between convolve() calls of one thread (batch mode).
#include "gpu/memory/workspace.hpp"

#include "gpu/launch/launch.hpp"  // launch_store_weights

#include <algorithm>
#include <utility>
#include <vector>

namespace cuconv {

namespace {

/// Pinned capacity for `needed` bytes: 1/8 spare, so a batch of slightly varying sizes stops
/// regrowing soon. Device planes get no spare: the strip plan sized them to the memory limit.
std::size_t grown(std::size_t needed) { return needed + needed / 8; }

/// Streams whose reads of the kept weights are tracked before the finished ones are dropped.
constexpr std::size_t kTrackedWeightReads = 16;

/// Bytes of a kept plane of `rows` rows of `row_bytes` (one linear allocation, pitched rows).
std::size_t kept_plane_bytes(std::size_t row_bytes, std::size_t rows) {
  return std::max<std::size_t>(gpu::plane_pitch(row_bytes) * rows, 1);
}

}  // namespace

gpu::WorkspaceState::~WorkspaceState() { release(); }

void gpu::WorkspaceState::bind_to_current_device() {
  int current = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&current));
  if (device >= 0 && device != current) release();
  if (device != current) automatic_limit = 0;
  device = current;
}

DeviceImageView gpu::WorkspaceState::image(std::size_t slot, int width, int height, int channels, int depth) {
  if (!kept) {
    if (pitched_planes_.size() <= slot) pitched_planes_.resize(slot + 1);
    pitched_planes_[slot] = DeviceImage(width, height, channels, depth);
    ++allocations;
    return pitched_planes_[slot].view();
  }
  DeviceImageView view{nullptr, 0, width, height, channels, depth};
  view.pitch = gpu::plane_pitch(view.row_bytes());
  const std::size_t bytes = kept_plane_bytes(view.row_bytes(), static_cast<std::size_t>(height));
  if (kept_planes_.size() <= slot) kept_planes_.resize(slot + 1);
  gpu::DeviceBuffer& buffer = kept_planes_[slot];
  if (buffer.size() < bytes) {
    buffer = gpu::DeviceBuffer();  // free first: the old and new never need to coexist
    buffer = gpu::DeviceBuffer(bytes);
    ++allocations;
  }
  view.data = static_cast<std::byte*>(buffer.data());
  return view;
}

void gpu::WorkspaceState::fit_planes(const std::vector<std::size_t>& row_bytes, std::size_t rows, std::uint64_t needed,
                                     std::uint64_t limit) noexcept {
  const std::size_t slots = row_bytes.size();
  if (needed + device_bytes_from_slot(slots) > limit) {
    if (pitched_planes_.size() > slots) pitched_planes_.resize(slots);
    if (kept_planes_.size() > slots) kept_planes_.resize(slots);
  }
  if (!kept) return;
  const auto held_size = [&](std::size_t slot) { return slot < kept_planes_.size() ? kept_planes_[slot].size() : 0; };
  std::uint64_t held_after = weights_.capacity + device_bytes_from_slot(slots);
  for (std::size_t slot = 0; slot < slots; ++slot)
    held_after += std::max(held_size(slot), kept_plane_bytes(row_bytes[slot], rows));
  if (held_after <= limit) return;
  for (std::size_t slot = 0; slot < slots && slot < kept_planes_.size(); ++slot) {
    if (kept_planes_[slot].size() > kept_plane_bytes(row_bytes[slot], rows)) kept_planes_[slot] = gpu::DeviceBuffer();
  }
}

std::uint64_t gpu::WorkspaceState::device_bytes_from_slot(std::size_t slots) const noexcept {
  std::uint64_t total = 0;
  for (std::size_t slot = slots; slot < pitched_planes_.size(); ++slot) {
    const DeviceImageView view = pitched_planes_[slot].view();
    total += view.pitch * static_cast<std::size_t>(view.height);
  }
  for (std::size_t slot = slots; slot < kept_planes_.size(); ++slot) total += kept_planes_[slot].size();
  return total;
}

const float* gpu::WorkspaceState::device_weights(const std::vector<float>& weights, cudaStream_t stream) {
  if (weights_.device != nullptr && weights_.values == weights) {
    if (stream != weights_.stored_on) CUCONV_CUDA_TRY(cudaStreamWaitEvent(stream, weights_.stored->get(), 0));
    return weights_.device;
  }
  const std::size_t bytes = sizeof(float) * std::max<std::size_t>(weights.size(), 1);
  if (weights_.capacity < bytes) {
    release_weights(stream);
    weights_.device = static_cast<float*>(allocate_stream_ordered(bytes, stream));
    weights_.capacity = bytes;
    ++allocations;
  } else {
    wait_for_weight_reads(stream);  // work queued elsewhere may still read the old weights
  }
  // Every earlier read is now ordered before this store, and later ones are recorded afresh.
  weights_.reads.clear();
  weights_.values.clear();  // unknown until the store is queued
  launch_store_weights(weights_.device, weights.data(), weights.size(), stream);
  if (!weights_.stored) weights_.stored.emplace(gpu::CudaEvent::ordering_only);
  weights_.stored->record(stream);
  weights_.stored_on = stream;
  weights_.values = weights;
  return weights_.device;
}

void gpu::WorkspaceState::weights_read(cudaStream_t stream) {
  if (weights_.device == nullptr) return;
  for (auto& [read_on, event] : weights_.reads) {
    if (read_on == stream) {
      event.record(stream);
      return;
    }
  }
  // A caller that cycles through many streams: reads already done need no waiting for.
  if (weights_.reads.size() >= kTrackedWeightReads) {
    std::erase_if(weights_.reads, [](const auto& read) { return cudaEventQuery(read.second.get()) == cudaSuccess; });
    cudaGetLastError();  // a query's cudaErrorNotReady is an answer, not an error
  }
  weights_.reads.emplace_back(stream, gpu::CudaEvent(gpu::CudaEvent::ordering_only));
  weights_.reads.back().second.record(stream);
}

void gpu::WorkspaceState::wait_for_weight_reads(cudaStream_t stream) {
  if (weights_.stored && weights_.stored_on != stream)
    CUCONV_CUDA_TRY(cudaStreamWaitEvent(stream, weights_.stored->get(), 0));
  for (const auto& [read_on, event] : weights_.reads)
    if (read_on != stream) CUCONV_CUDA_TRY(cudaStreamWaitEvent(stream, event.get(), 0));
}

void gpu::WorkspaceState::release_weights(cudaStream_t stream) noexcept {
  if (weights_.device != nullptr) {
    try {
      wait_for_weight_reads(stream);
      cudaFreeAsync(weights_.device, stream);  // no check: releases never throw
    } catch (const Error&) {
      // Reads that cannot be waited for keep the buffer: freeing it could pull it from under them.
    }
  }
  weights_ = KeptWeights{};  // events may be destroyed while pending
}

gpu::PinnedBuffer& gpu::WorkspaceState::staging(std::size_t slot, std::size_t bytes) {
  if (staging_.size() <= slot) staging_.resize(slot + 1);
  gpu::PinnedBuffer& buffer = staging_[slot];
  if (buffer.size() < bytes) {
    buffer = gpu::PinnedBuffer();
    buffer = gpu::PinnedBuffer(grown(bytes));
    ++allocations;
  }
  return buffer;
}

gpu::CudaEvent& gpu::WorkspaceState::chunk_event(std::size_t index) {
  while (chunk_events_.size() <= index) chunk_events_.emplace_back();
  return chunk_events_[index];
}

cudaStream_t gpu::WorkspaceState::stream() {
  if (!stream_) stream_.emplace();
  return stream_->get();
}

gpu::StageEvents& gpu::WorkspaceState::events() {
  if (!events_) events_.emplace();
  return *events_;
}

std::uint64_t gpu::WorkspaceState::device_bytes() const noexcept {
  return weights_.capacity + device_bytes_from_slot(0);
}

std::uint64_t gpu::WorkspaceState::pinned_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const gpu::PinnedBuffer& b : staging_) total += b.size();
  return total;
}

void gpu::WorkspaceState::release() noexcept {
  // Device memory, streams and events belong to `device`; free them with it current.
  int current = -1;
  const bool switch_device = device >= 0 && cudaGetDevice(&current) == cudaSuccess && current != device &&
                             cudaSetDevice(device) == cudaSuccess;
  if (stream_) cudaStreamSynchronize(stream_->get());  // nothing may still use the memory
  pitched_planes_.clear();
  kept_planes_.clear();
  release_weights(cudaStreamLegacy);  // ordered after its reads on any stream, no host wait
  staging_.clear();
  chunk_events_.clear();
  events_.reset();
  stream_.reset();
  if (switch_device) cudaSetDevice(current);
  cudaGetLastError();  // a failure here has nobody to report to; leave no sticky state behind
  device = -1;
}

GpuWorkspace::GpuWorkspace() : state_(std::make_unique<gpu::WorkspaceState>(true)) {}
GpuWorkspace::~GpuWorkspace() = default;
GpuWorkspace::GpuWorkspace(GpuWorkspace&&) noexcept = default;
GpuWorkspace& GpuWorkspace::operator=(GpuWorkspace&&) noexcept = default;

void GpuWorkspace::prepare(int device) noexcept {
  try {
    // Block while waiting for the GPU: with one context and many cores CUDA's default is to spin,
    // and in a batch a spinning filter thread takes a core from decoding and encoding for the
    // whole of every copy. Failure (flags fixed by another caller) only leaves the default.
    // cudaFree(nullptr): the first runtime call that needs a context.
    const bool selected = device < 0 || cudaSetDevice(device) == cudaSuccess;
    if (selected) {
      static_cast<void>(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
      cudaGetLastError();
    }
    if (selected && cudaFree(nullptr) == cudaSuccess) {
      gpu::WorkspaceState& state = gpu::workspace_state(*this);
      state.bind_to_current_device();
      static_cast<void>(state.stream());
    }
  } catch (...) {
    // Reported by convolve(), where the image that needs the device is known.
  }
  cudaGetLastError();
}

gpu::WorkspaceState& gpu::WorkspaceAccess::state(GpuWorkspace& workspace) {
  if (!workspace.state_)
    workspace.state_ = std::make_unique<WorkspaceState>(true);  // a moved-from workspace starts afresh
  return *workspace.state_;
}

std::uint64_t GpuWorkspace::device_bytes() const noexcept { return state_ ? state_->device_bytes() : 0; }
std::uint64_t GpuWorkspace::pinned_bytes() const noexcept { return state_ ? state_->pinned_bytes() : 0; }
std::uint64_t GpuWorkspace::allocations() const noexcept { return state_ ? state_->allocations : 0; }

}  // namespace cuconv
