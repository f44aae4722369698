// SPDX-License-Identifier: Apache-2.0
#pragma once
// Host threads that copy a staged transfer's chunks beside the caller. One thread copies pageable
// memory into page-locked memory at about 13 GB/s on the GPU hosts measured, below what the link
// moves (bench/results/host-transfers.md), so a 512x512 float upload spent most of its time
// in memcpy; several threads copy the chunks while the caller queues each one's transfer as soon as
// it is there.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cuconv::gpu {

/// Copies `bytes` from `source` into page-locked staging at `destination` with non-temporal
/// (streaming) stores where the CPU has them (x86-64), plain memcpy elsewhere. The link reads the
/// staging next, not the CPU: after plain stores, which leave each line dirty in the cache, a 1 MiB
/// transfer took 50 us instead of 28 on an H100 host (bench/results/host-transfers.md). Call
/// streaming_fence() before another thread or the link reads what was copied.
void copy_streaming(void* destination, const void* source, std::size_t bytes) noexcept;
/// Orders the streaming stores before it ahead of every store after it (sfence on x86-64).
void streaming_fence() noexcept;

class HostCopyPool {
 public:
  /// A pool of `threads` in all, the caller among them (threads - 1 are started, on first use).
  explicit HostCopyPool(int threads);
  HostCopyPool(const HostCopyPool&) = delete;
  HostCopyPool& operator=(const HostCopyPool&) = delete;
  ~HostCopyPool();

  /// The process's pool: kMaxThreads threads, or as many as the CPUs this process may run on
  /// (sched_getaffinity: a Slurm job's or taskset's share) when fewer.
  [[nodiscard]] static HostCopyPool& shared();
  static constexpr int kMaxThreads = 4;

  [[nodiscard]] int threads() const noexcept { return threads_; }
  /// Jobs the pool's threads were offered so far (run() calls that did not copy alone): what a
  /// test reads to see that a caller's copies took the parallel path.
  [[nodiscard]] std::uint64_t parallel_jobs() const noexcept { return parallel_jobs_.load(); }

  /// How long workers look for the next job after one before they sleep, given the time between
  /// the starts of the last two jobs: twice that time while it is at most 1 ms (a loop of calls
  /// finds them awake: 1024x1024 NumPy calls, a copy every 450 us, were 5-6% faster on an H100
  /// host than with 100 us; bench/results/host-transfers.md), else 100 us (an idle process leaves
  /// its cores alone).
  [[nodiscard]] static std::chrono::nanoseconds spin_after(std::chrono::nanoseconds interval) noexcept;
  /// What the workers spin now: spin_after() of the interval between the last two parallel jobs
  /// (100 us before the second), what a test reads to see that run() keeps it.
  [[nodiscard]] std::chrono::nanoseconds spin() const noexcept {
    return std::chrono::nanoseconds(spin_ns_.load(std::memory_order_relaxed));
  }

  /// Runs copy(i) for every i in [0, count) on the caller and the pool's threads, and ready(i) on
  /// the caller's thread for each i in increasing order as soon as copy(i) has returned (queueing
  /// that chunk's transfer). The caller copies too, and alone when `parallel` is false, when
  /// another caller holds the pool or in a fork()ed child; workers that wake late join the chunks
  /// left. Returns when no worker is inside the job; an exception from ready() stops the job and
  /// is rethrown then.
  void run(int count, bool parallel, const std::function<void(int)>& copy, const std::function<void(int)>& ready);

 private:
  void work();
  /// Takes chunks until none are left.
  void take_chunks();

  const int threads_;
  const int owner_pid_;  ///< the process that may use the workers (a fork()ed child has none)
  std::mutex busy_;      ///< held by the one caller the workers serve
  std::vector<std::thread> workers_;
  std::atomic<unsigned> generation_{0};  ///< bumped for each job and to stop
  std::atomic<bool> stop_{false};
  std::atomic<int> next_{0};       ///< the next chunk to take
  std::atomic<int> count_{0};      ///< the job's chunks
  std::atomic<int> working_{0};    ///< workers inside the job
  std::atomic<bool> open_{false};  ///< a job is running: workers may join it
  std::atomic<std::uint64_t> parallel_jobs_{0};
  std::atomic<std::int64_t> spin_ns_;  ///< spin_after() of the last interval between jobs
  std::int64_t last_job_ns_ = 0;       ///< steady_clock time of the last job's start (the caller's)
  std::unique_ptr<std::atomic<bool>[]> done_;
  int done_capacity_ = 0;
  const std::function<void(int)>* copy_ = nullptr;
};

}  // namespace cuconv::gpu
