// SPDX-License-Identifier: Apache-2.0
#pragma once
// RAII owners for device resources: move-only, destructors never throw. Images have their own
// owner and views (include/cuconv/device_image.hpp); these are the buffers, streams and events.
#include "gpu/cuda_check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace cuconv::gpu {

/// cudaMallocPitch / cudaMalloc that throw Error{gpu}; running out of memory says so, with the
/// bytes needed and the bytes free ("out of device memory: needed N bytes ...").
[[nodiscard]] void* allocate_pitched(std::size_t row_bytes, std::size_t rows, std::size_t& pitch);
[[nodiscard]] void* allocate_linear(std::size_t bytes);
[[nodiscard]] void* allocate_stream_ordered(std::size_t bytes, cudaStream_t stream);
[[nodiscard]] void* allocate_pinned(std::size_t bytes);

/// Row pitch of a plane `row_bytes` wide as this project plans and lays it out: rounded up to 512
/// bytes, what cudaMallocPitch gives on current GPUs (more than the kernels' 16-byte vector
/// accesses need). The strip plan counts rows with it; kept workspace planes use it as their pitch.
inline constexpr std::size_t kPlanePitchAlignment = 512;
[[nodiscard]] constexpr std::size_t plane_pitch(std::size_t row_bytes) noexcept {
  return (row_bytes + kPlanePitchAlignment - 1) / kPlanePitchAlignment * kPlanePitchAlignment;
}

/// A move-only block of `size()` bytes from `Allocate` (which throws on failure), released with
/// `Release` (which must not throw; it gets nullptr for an empty buffer).
template <void* (*Allocate)(std::size_t), void (*Release)(void*) noexcept, class Byte>
class OwnedBytes {
 public:
  OwnedBytes() = default;
  explicit OwnedBytes(std::size_t bytes) : data_(Allocate(bytes)), bytes_(bytes) {}
  OwnedBytes(OwnedBytes&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  OwnedBytes& operator=(OwnedBytes&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  OwnedBytes(const OwnedBytes&) = delete;
  OwnedBytes& operator=(const OwnedBytes&) = delete;
  ~OwnedBytes() { Release(data_); }

  [[nodiscard]] Byte* data() const noexcept { return static_cast<Byte*>(data_); }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

inline void release_device(void* data) noexcept { cudaFree(data); }  // no check: destructors never throw
inline void release_pinned(void* data) noexcept {
  if (data != nullptr) cudaFreeHost(data);
}

/// A linear device allocation (cudaMalloc).
using DeviceBuffer = OwnedBytes<allocate_linear, release_device, void>;
/// Page-locked host memory (cudaMallocHost): copies from and to it run asynchronously, at the
/// link's full speed.
using PinnedBuffer = OwnedBytes<allocate_pinned, release_pinned, unsigned char>;

/// Stream-ordered scratch memory (the device's default pool): allocation and release queue on the
/// stream, so repeated launches reuse the same memory without synchronising.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, cudaStream_t stream)
      : data_(allocate_stream_ordered(bytes, stream)), stream_(stream) {}
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() { cudaFreeAsync(data_, stream_); }
  [[nodiscard]] void* data() const noexcept { return data_; }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

/// A move-only CUDA handle (stream, event) destroyed with `Destroy`, whose status is not checked:
/// destructors never throw.
template <class Handle, cudaError_t (*Destroy)(Handle)>
class OwnedHandle {
 public:
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;
  OwnedHandle(OwnedHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  OwnedHandle& operator=(OwnedHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~OwnedHandle() {
    if (handle_ != nullptr) Destroy(handle_);
  }
  [[nodiscard]] Handle get() const noexcept { return handle_; }

 protected:
  OwnedHandle() = default;
  Handle handle_ = nullptr;
};

/// A non-blocking CUDA stream.
class CudaStream : public OwnedHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  CudaStream() { CUCONV_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }
  /// A stream whose work the device schedules before that of ordinary streams.
  struct HighPriority {};
  static constexpr HighPriority high_priority{};
  explicit CudaStream(HighPriority) {
    int least = 0, greatest = 0;
    CUCONV_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUCONV_CUDA_TRY(cudaStreamCreateWithPriority(&handle_, cudaStreamNonBlocking, greatest));
  }
};

/// A timing event, or one that only orders work (cheaper to record and wait for).
class CudaEvent : public OwnedHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  CudaEvent() { CUCONV_CUDA_TRY(cudaEventCreate(&handle_)); }
  struct OrderingOnly {};
  static constexpr OrderingOnly ordering_only{};
  explicit CudaEvent(OrderingOnly) { CUCONV_CUDA_TRY(cudaEventCreateWithFlags(&handle_, cudaEventDisableTiming)); }
  void record(cudaStream_t stream) { CUCONV_CUDA_TRY(cudaEventRecord(handle_, stream)); }

  /// Milliseconds from `start` to `stop` (both recorded; waits for `stop`).
  [[nodiscard]] static float elapsed_ms(const CudaEvent& start, const CudaEvent& stop) {
    CUCONV_CUDA_TRY(cudaEventSynchronize(stop.get()));
    float ms = 0;
    CUCONV_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return ms;
  }
};

}  // namespace cuconv::gpu
