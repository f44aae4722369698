// SPDX-License-Identifier: Apache-2.0
#pragma once
// Dealing work by progress: the slot (a device) with the least work in flight takes the next
// piece. The batch pipeline deals its images to devices this way, the server its commands.
#include <cuconv/error.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cuconv::engine {

/// Work in flight per slot: take() counts one more on the least loaded slot (ties: the lowest)
/// and returns it; give() counts one off. Not thread-safe by itself (its owner locks).
class LeastLoaded {
 public:
  explicit LeastLoaded(std::size_t slots = 0) : load_(slots, 0) {}
  [[nodiscard]] std::size_t take() {
    if (load_.empty()) throw Error(ErrorKind::internal, "LeastLoaded::take: no slots");
    const auto least = std::min_element(load_.begin(), load_.end());
    ++*least;
    return static_cast<std::size_t>(least - load_.begin());
  }
  void give(std::size_t slot) noexcept {
    if (slot < load_.size() && load_[slot] > 0) --load_[slot];
  }
  [[nodiscard]] unsigned load(std::size_t slot) const noexcept { return load_.at(slot); }

 private:
  std::vector<unsigned> load_;
};

}  // namespace cuconv::engine
