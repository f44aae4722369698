// SPDX-License-Identifier: Apache-2.0
#pragma once
// A budget of bytes shared by threads: take() waits until the bytes fit (or nothing is taken),
// give() returns them. The GPU JPEG pipeline counts its decoded device images with one: its
// queue is bounded by count, and large photos would otherwise hold many batches' worth.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace cuconv::engine {

class ByteBudget {
 public:
  explicit ByteBudget(std::size_t limit) : limit_(std::max<std::size_t>(limit, 1)) {}

  /// Waits until `bytes` more fit within the limit, or nothing is taken (one item larger than
  /// the limit passes alone), then takes them.
  void take(std::size_t bytes) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return taken_ == 0 || taken_ + bytes <= limit_; });
    taken_ += bytes;
    peak_ = std::max(peak_, taken_);
  }
  /// Returns `bytes` taken before.
  void give(std::size_t bytes) noexcept {
    std::unique_lock lock(mutex_);
    taken_ -= std::min(bytes, taken_);
    lock.unlock();
    room_.notify_all();
  }
  /// The most taken at once so far.
  [[nodiscard]] std::size_t peak() const {
    const std::lock_guard lock(mutex_);
    return peak_;
  }

 private:
  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::size_t taken_ = 0;
  std::size_t peak_ = 0;
};

}  // namespace cuconv::engine
