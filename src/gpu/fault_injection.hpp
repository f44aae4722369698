#pragma once
// Test-only GPU fault injection, read once from the environment variable CUCONV_TEST_GPU_FAULT:
//   alloc   the next device allocation fails as cudaErrorMemoryAllocation (once per process);
//   launch  every launch_variant call fails as cudaErrorLaunchFailure, before launching.
// A healthy GPU cannot be made to run out of memory or fault on demand, so this is how the tests
// drive the error paths end to end (exit 5, and `auto`'s fallback to OpenCV). Unset, or any other
// value: no fault.

namespace cuconv::detail {

/// True once, for the first allocation after start-up, when CUCONV_TEST_GPU_FAULT=alloc.
[[nodiscard]] bool take_injected_allocation_fault() noexcept;

/// True when CUCONV_TEST_GPU_FAULT=launch.
[[nodiscard]] bool launch_fault_injected() noexcept;

}  // namespace cuconv::detail
