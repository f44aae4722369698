// SPDX-License-Identifier: Apache-2.0
#pragma once
// A blocking first-in first-out queue of bounded size between two pipeline stages: producers wait
// while it is full, so a fast stage cannot pile up decoded images in memory.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace cuconv::engine {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  /// Waits for room, then appends. Returns false (and drops `value`) once the queue is closed.
  bool push(T value) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(value));
    not_empty_.notify_one();
    return true;
  }

  /// Waits for an item; std::nullopt when the queue is closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return value;
  }

  /// An item if one is queued now, without waiting (how a consumer fills a batch).
  std::optional<T> try_pop() {
    std::unique_lock lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return value;
  }

  /// Waits for a first item, then takes up to `most` items, waiting up to `linger` for more while
  /// fewer are queued (how a consumer fills a batch without stalling on a slow producer). Empty
  /// when the queue is closed and drained.
  std::vector<T> pop_some(std::size_t most, std::chrono::microseconds linger) {
    std::vector<T> taken;
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    const auto until = std::chrono::steady_clock::now() + linger;
    while (taken.size() < most) {
      if (items_.empty()) {
        if (taken.empty() && closed_) break;
        if (!not_empty_.wait_until(lock, until, [&] { return closed_ || !items_.empty(); }) || items_.empty()) break;
      }
      taken.push_back(std::move(items_.front()));
      items_.pop_front();
      not_full_.notify_one();
    }
    return taken;
  }

  /// No more pushes; consumers still receive what is queued, then std::nullopt.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace cuconv::engine
