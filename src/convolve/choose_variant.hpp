// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `--variant auto` runs: the one dispatcher (choose_auto) over one row of the tuning table
// (src/gpu/tuning/auto_tuning.hpp). choose_variant and convolve() both ask it.
#include "filter/splits.hpp"
#include "gpu/tuning/auto_tuning.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <optional>

namespace cuconv::convolution {

/// One request as auto sees it: the filter, the options, the filter's splits (separable_for and
/// dense_tensor_for for these depths) and the image's size (0 x 0: not known, taken as small but
/// not as tiny).
struct AutoRequest {
  const Filter& filter;
  const ConvolveOptions& options;
  const std::optional<filter::SeparableFactors>& separable;
  const std::optional<filter::DenseTensorSplit>& dense;
  int input_depth = 0;
  int output_depth = 0;
  int channels = 1;
  int width = 0;
  int height = 0;
  [[nodiscard]] long long pixels() const { return static_cast<long long>(width) * height; }
};

/// The GPU auto would run on: none (`present` false: OpenCV on the CPU), or its row of the tuning
/// table and whether it runs the warpgroup (sm_90a) kernels, asked only where a rule needs it.
struct AutoDevice {
  bool present = false;
  const gpu::tuning::AutoTuning* tuning = &gpu::tuning::kGeneric;
  bool (*runs_wgmma)() = nullptr;  ///< nullptr: it does not
};

/// The calling thread's current device as an AutoDevice (its kind asked once per device);
/// `gpu_present` false gives the one with no GPU without asking the driver anything.
[[nodiscard]] AutoDevice current_auto_device(bool gpu_present);

/// The variant `--variant auto` runs for `request` on `device`.
[[nodiscard]] Variant choose_auto(const AutoRequest& request, const AutoDevice& device);

}  // namespace cuconv::convolution
