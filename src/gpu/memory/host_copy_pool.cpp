// SPDX-License-Identifier: Apache-2.0
// Host threads that copy a staged transfer's chunks beside the caller (src/gpu/memory/host_copy_pool.hpp).
// Workers take chunk numbers from one counter; the caller copies too and queues each chunk's
// transfer in order as its copy is done. A worker that wakes after a job opened joins it, one that
// wakes after it closed leaves it alone, so the caller never waits for a sleeping thread. After a
// job the workers spin a while before they sleep, longer while jobs come in quick succession.
#include "gpu/memory/host_copy_pool.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cuconv::gpu {

void copy_streaming(void* destination, const void* source, std::size_t bytes) noexcept {
  auto* dst = static_cast<unsigned char*>(destination);
  const auto* src = static_cast<const unsigned char*>(source);
#if defined(__SSE2__)
  // The head up to dst's first 16-byte boundary and the tail past the last 64-byte group plainly;
  // the groups as four unaligned loads and four streaming stores.
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  std::size_t done = head;
  for (; done + 64 <= bytes; done += 64) {
    const auto* from = reinterpret_cast<const __m128i*>(src + done);
    auto* to = reinterpret_cast<__m128i*>(dst + done);
    const __m128i a = _mm_loadu_si128(from);
    const __m128i b = _mm_loadu_si128(from + 1);
    const __m128i c = _mm_loadu_si128(from + 2);
    const __m128i d = _mm_loadu_si128(from + 3);
    _mm_stream_si128(to, a);
    _mm_stream_si128(to + 1, b);
    _mm_stream_si128(to + 2, c);
    _mm_stream_si128(to + 3, d);
  }
  std::memcpy(dst + done, src + done, bytes - done);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void streaming_fence() noexcept {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

namespace {

/// Workers keep looking for a job at least this long after their last one before they sleep, and
/// at most kMaxSpin (spin_after).
constexpr std::chrono::microseconds kSpinBeforeSleep{100};
constexpr std::chrono::microseconds kMaxSpin{2000};

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int usable_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

HostCopyPool::HostCopyPool(int threads)
    : threads_(std::max(1, threads)),
      owner_pid_(static_cast<int>(::getpid())),
      spin_ns_(std::chrono::nanoseconds(kSpinBeforeSleep).count()) {}

std::chrono::nanoseconds HostCopyPool::spin_after(std::chrono::nanoseconds interval) noexcept {
  if (interval.count() < 0 || 2 * interval > kMaxSpin) return kSpinBeforeSleep;
  return std::max<std::chrono::nanoseconds>(kSpinBeforeSleep, 2 * interval);
}

HostCopyPool::~HostCopyPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

HostCopyPool& HostCopyPool::shared() {
  // Never destroyed: its threads sleep until the process ends, and no static destructor joins
  // threads that a fork()ed child does not have.
  static HostCopyPool* const pool = new HostCopyPool(std::min(kMaxThreads, usable_cpus()));
  return *pool;
}

void HostCopyPool::take_chunks() {
  const int count = count_.load();
  for (int i = next_.fetch_add(1); i < count; i = next_.fetch_add(1)) {
    (*copy_)(i);
    done_[static_cast<std::size_t>(i)].store(true);
  }
}

void HostCopyPool::work() {
  unsigned seen = 0;
  for (;;) {
    unsigned now = generation_.load();
    const std::int64_t sleep_at = steady_ns() + spin_ns_.load(std::memory_order_relaxed);
    while (now == seen && steady_ns() < sleep_at) {
      cpu_relax();
      now = generation_.load();
    }
    while (now == seen) {
      generation_.wait(seen);
      now = generation_.load();
    }
    seen = now;
    if (stop_.load()) return;
    // Counted in before looking: the caller closes the job, then waits until no worker is in it.
    working_.fetch_add(1);
    if (open_.load() && generation_.load() == now) take_chunks();
    working_.fetch_sub(1);
  }
}

void HostCopyPool::run(int count, bool parallel, const std::function<void(int)>& copy,
                       const std::function<void(int)>& ready) {
  // Only a caller that asks for the workers takes the pool: one copying alone must not keep them
  // from another that asks.
  std::unique_lock lock(busy_, std::defer_lock);
  if (!parallel || threads_ <= 1 || count <= 1 || !lock.try_lock() || static_cast<int>(::getpid()) != owner_pid_) {
    for (int i = 0; i < count; ++i) {
      copy(i);
      ready(i);
    }
    return;
  }
  if (workers_.empty())
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { work(); });
  parallel_jobs_.fetch_add(1);
  const std::int64_t start = steady_ns();
  if (last_job_ns_ != 0)
    spin_ns_.store(spin_after(std::chrono::nanoseconds(start - last_job_ns_)).count(), std::memory_order_relaxed);
  last_job_ns_ = start;
  if (count > done_capacity_) {  // no worker is inside a job here
    done_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(count));
    done_capacity_ = count;
  }
  for (int i = 0; i < count; ++i) done_[static_cast<std::size_t>(i)].store(false);
  copy_ = &copy;
  count_.store(count);
  next_.store(0);
  open_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();

  std::exception_ptr error;
  for (int queued = 0; queued < count && !error;) {
    if (done_[static_cast<std::size_t>(queued)].load()) {
      try {
        ready(queued);
      } catch (...) {
        error = std::current_exception();
        next_.store(count);  // no chunk is started after this
      }
      ++queued;
      continue;
    }
    if (const int i = next_.fetch_add(1); i < count) {
      copy(i);
      done_[static_cast<std::size_t>(i)].store(true);
    } else {
      cpu_relax();  // the rest are being copied by workers
    }
  }
  open_.store(false);
  while (working_.load() != 0) cpu_relax();
  if (error) std::rethrow_exception(error);
}

}  // namespace cuconv::gpu
