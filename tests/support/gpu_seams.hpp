// SPDX-License-Identifier: Apache-2.0
#pragma once
// The tests' side of the GPU seams (src/gpu/seams.hpp): a launch counter every GPU suite shares,
// installed on first use for the whole process, which can also keep the warpgroup kernel from
// running (to compare it with the dense kernel on one input); and a fault injector, poisoned
// outputs and forced strips, each set for one scope.
#include "gpu/seams.hpp"

#include <array>
#include <atomic>
#include <cstdint>

namespace cuconv::test {

/// Counts the launches of each kernel path (from the moment it is installed) and answers which
/// paths may run.
class LaunchCounter final : public gpu::LaunchObserver {
 public:
  [[nodiscard]] bool allows(gpu::KernelPath path) noexcept override {
    return !denied_[static_cast<std::size_t>(path)].load(std::memory_order_relaxed);
  }
  void launched(gpu::KernelPath path) noexcept override {
    if (paused_.load(std::memory_order_relaxed) == 0)
      counts_[static_cast<std::size_t>(path)].fetch_add(1, std::memory_order_relaxed);
  }
  /// While alive, launches are not counted: a helper's extra run (the second poison) leaves the
  /// counts the tests read as they would be without it.
  class Paused {
   public:
    explicit Paused(LaunchCounter& counter) : counter_(counter) { counter_.paused_.fetch_add(1); }
    ~Paused() { counter_.paused_.fetch_sub(1); }
    Paused(const Paused&) = delete;
    Paused& operator=(const Paused&) = delete;

   private:
    LaunchCounter& counter_;
  };
  [[nodiscard]] std::uint64_t count(gpu::KernelPath path) const noexcept {
    return counts_[static_cast<std::size_t>(path)].load(std::memory_order_relaxed);
  }
  /// Whether a launcher may take `path` where it has another way (every path until told otherwise).
  void allow(gpu::KernelPath path, bool allowed) noexcept {
    denied_[static_cast<std::size_t>(path)].store(!allowed, std::memory_order_relaxed);
  }

 private:
  std::array<std::atomic<std::uint64_t>, gpu::kKernelPaths> counts_{};
  std::array<std::atomic<bool>, gpu::kKernelPaths> denied_{};
  std::atomic<int> paused_{0};
};

/// The process's launch counter, installed as the launch observer on the first call (never
/// removed: kernels may still run while static objects are destroyed).
inline LaunchCounter& launch_counter() {
  static LaunchCounter* const counter = [] {
    auto* made = new LaunchCounter;
    gpu::set_launch_observer(made);
    return made;
  }();
  return *counter;
}

/// Launches of `path` since the counter was installed (compare two readings).
inline std::uint64_t launches(gpu::KernelPath path) { return launch_counter().count(path); }

/// launches(Path) as a function of no arguments, for helpers that take a counter.
template <gpu::KernelPath Path>
std::uint64_t launches_of() noexcept {
  return launch_counter().count(Path);
}

/// Launches of `tensor`'s rank-1 kernels, either kind (the both-passes one included).
inline std::uint64_t rank1_tensor_launches() {
  return launches(gpu::KernelPath::tensor_rank1) + launches(gpu::KernelPath::tensor_rank1_mma);
}

/// `path` not taken by its launcher (which takes its other way) for the life of this object.
class PathOff {
 public:
  explicit PathOff(gpu::KernelPath path) : path_(path) { launch_counter().allow(path_, false); }
  ~PathOff() { launch_counter().allow(path_, true); }
  PathOff(const PathOff&) = delete;
  PathOff& operator=(const PathOff&) = delete;

 private:
  gpu::KernelPath path_;
};

/// Installs `injector` for the life of this object (the one before comes back after).
class ScopedFaultInjector {
 public:
  explicit ScopedFaultInjector(gpu::FaultInjector& injector) : previous_(gpu::set_fault_injector(&injector)) {}
  ~ScopedFaultInjector() { gpu::set_fault_injector(previous_); }
  ScopedFaultInjector(const ScopedFaultInjector&) = delete;
  ScopedFaultInjector& operator=(const ScopedFaultInjector&) = delete;

 private:
  gpu::FaultInjector* previous_;
};

/// GPU outputs poisoned (or not, `poison` false) for the life of this object (gpu::set_poison_outputs).
class PoisonOutputs {
 public:
  explicit PoisonOutputs(bool poison = true) : previous_(gpu::set_poison_outputs(poison)) {}
  ~PoisonOutputs() { gpu::set_poison_outputs(previous_); }
  PoisonOutputs(const PoisonOutputs&) = delete;
  PoisonOutputs& operator=(const PoisonOutputs&) = delete;

 private:
  bool previous_;
};

/// Host images filtered in strips of at most `rows` output rows for the life of this object
/// (gpu::set_max_strip_rows; 0: only the memory limit decides).
class MaxStripRows {
 public:
  explicit MaxStripRows(int rows) : previous_(gpu::set_max_strip_rows(rows)) {}
  ~MaxStripRows() { gpu::set_max_strip_rows(previous_); }
  MaxStripRows(const MaxStripRows&) = delete;
  MaxStripRows& operator=(const MaxStripRows&) = delete;

 private:
  int previous_;
};

}  // namespace cuconv::test
