// SPDX-License-Identifier: Apache-2.0
// Device allocations with errors that say how much memory was needed; a test's fault injector
// (gpu/seams.hpp) is asked before each one.
#include "gpu/memory/device_memory.hpp"

#include "gpu/seams.hpp"

#include <cuconv/convolve.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace cuconv::gpu {

namespace {

/// Throws Error{gpu}; out of memory gets a message of its own, with what was asked for and what
/// the device has left, because it is the one failure the user can act on.
[[noreturn]] void throw_allocation_error(cudaError_t status, std::size_t bytes, const std::string& what,
                                         const char* call) {
  if (status != cudaErrorMemoryAllocation) throw_cuda_error(status, call, __FILE__, __LINE__);
  cudaGetLastError();  // not sticky, but leave the next call a clean slate
  std::string message = "out of device memory: needed " + std::to_string(bytes) + " bytes for " + what + " (" + call +
                        ": " + cudaGetErrorName(status) + ")";
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    message += "; the device has " + std::to_string(free_bytes) + " of " + std::to_string(total_bytes) + " bytes free";
  else
    cudaGetLastError();
  throw Error(ErrorKind::gpu, message + " (a lower `gpu_memory_limit` filters the image in smaller strips)");
}

}  // namespace

void* allocate_pitched(std::size_t row_bytes, std::size_t rows, std::size_t& pitch) {
  void* data = nullptr;
  cudaError_t status = injected_allocation_fault(row_bytes * rows);
  if (status == cudaSuccess) status = cudaMallocPitch(&data, &pitch, row_bytes, rows);
  if (status != cudaSuccess)
    throw_allocation_error(status, row_bytes * rows,
                           "a plane of " + std::to_string(rows) + " rows of " + std::to_string(row_bytes) + " bytes",
                           "cudaMallocPitch");
  return data;
}

void* allocate_linear(std::size_t bytes) {
  void* data = nullptr;
  cudaError_t status = injected_allocation_fault(bytes);
  if (status == cudaSuccess) status = cudaMalloc(&data, bytes);
  if (status != cudaSuccess) throw_allocation_error(status, bytes, "a linear buffer", "cudaMalloc");
  return data;
}

void* allocate_stream_ordered(std::size_t bytes, cudaStream_t stream) {
  void* data = nullptr;
  cudaError_t status = injected_allocation_fault(bytes);
  if (status == cudaSuccess) status = cudaMallocAsync(&data, bytes, stream);
  if (status != cudaSuccess) throw_allocation_error(status, bytes, "scratch memory", "cudaMallocAsync");
  return data;
}

void* allocate_pinned(std::size_t bytes) {
  void* data = nullptr;
  const cudaError_t status = cudaMallocHost(&data, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(ErrorKind::gpu, "could not allocate " + std::to_string(bytes) + " bytes of pinned host memory (" +
                                    cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")");
  }
  return data;
}

}  // namespace cuconv::gpu

namespace cuconv {

PinnedHostBuffer::PinnedHostBuffer(std::size_t bytes) : data_(gpu::allocate_pinned(bytes)), bytes_(bytes) {}
PinnedHostBuffer::~PinnedHostBuffer() { gpu::release_pinned(data_); }
PinnedHostBuffer::PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
PinnedHostBuffer& PinnedHostBuffer::operator=(PinnedHostBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

}  // namespace cuconv
