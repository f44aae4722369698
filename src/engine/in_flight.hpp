// SPDX-License-Identifier: Apache-2.0
#pragma once
// Work in flight in the batch pipeline: a token that holds one image in a count (and keeps the
// count's peak) while it moves through the queues, a wait for a count to drain, and the state
// the pipeline keeps of each item between its stages.
#include "engine/batch_pipeline.hpp"
#include "engine/image_operation.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
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

/// One image on its way through the stages.
struct Work {
  std::size_t item = 0;
  LoadedImage loaded;
  HeldImage held;
};

/// One item of the batch and what the pipeline keeps of it between stages: its task, its route
/// (decided once), its report, when its work started, and its image while the device's GPU codec
/// pipeline decodes, filters and encodes it (that pipeline reads the bytes in place and hands back
/// only the item's number).
struct ItemState {
  ImageTask task;
  Route route;
  ItemReport report;
  std::chrono::steady_clock::time_point started{};
  std::optional<Work> at_gpu_codec;
  std::size_t lane = 0;  ///< the device lane that took it
};

}  // namespace cuconv::engine
