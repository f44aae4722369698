#pragma once
// RAII owners for device resources: move-only, destructors never throw. Images have their own
// owner and views (include/cuconv/device_image.hpp); these are the buffers, streams and events.
#include "gpu/cuda_check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace cuconv::detail {

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

/// A non-blocking CUDA stream.
class CudaStream {
 public:
  CudaStream() { CUCONV_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// A timing event.
class CudaEvent {
 public:
  CudaEvent() { CUCONV_CUDA_TRY(cudaEventCreate(&event_)); }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  void record(cudaStream_t stream) { CUCONV_CUDA_TRY(cudaEventRecord(event_, stream)); }
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }

  /// Milliseconds from `start` to `stop` (both recorded; waits for `stop`).
  [[nodiscard]] static float elapsed_ms(const CudaEvent& start, const CudaEvent& stop) {
    CUCONV_CUDA_TRY(cudaEventSynchronize(stop.event_));
    float ms = 0;
    CUCONV_CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, stop.event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace cuconv::detail
