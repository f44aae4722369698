// SPDX-License-Identifier: Apache-2.0
#pragma once
// Counts of work in flight in the batch pipeline: a token that holds one image in a count (and
// keeps the count's peak) while it moves through the queues, and a wait for a count to drain.
#include <atomic>
#include <cstddef>
#include <utility>

namespace cuconv::engine {

/// Counts one image the pipeline holds, from the start of its decoding until its Work ends
/// (written, failed or dropped); moves with the Work through the queues.
class HeldImage {
 public:
  HeldImage() = default;
  HeldImage(std::atomic<std::size_t>& held, std::atomic<std::size_t>& peak) : held_(&held) {
    const std::size_t now = held.fetch_add(1) + 1;
    std::size_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
  }
  HeldImage(HeldImage&& other) noexcept : held_(std::exchange(other.held_, nullptr)) {}
  HeldImage& operator=(HeldImage&& other) noexcept {
    if (this != &other) {
      release();
      held_ = std::exchange(other.held_, nullptr);
    }
    return *this;
  }
  HeldImage(const HeldImage&) = delete;
  HeldImage& operator=(const HeldImage&) = delete;
  ~HeldImage() { release(); }

 private:
  void release() noexcept {
    if (held_ != nullptr) held_->fetch_sub(1);
    held_ = nullptr;
  }
  std::atomic<std::size_t>* held_ = nullptr;
};

/// Waits until a counter of work handed to others falls to zero: now (wait()) and when it goes.
struct WarmWait {
  std::atomic<std::size_t>& in_flight;
  void wait() const noexcept {
    for (std::size_t n = in_flight.load(); n != 0; n = in_flight.load()) in_flight.wait(n);
  }
  ~WarmWait() { wait(); }
};

}  // namespace cuconv::engine
