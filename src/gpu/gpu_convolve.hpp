// SPDX-License-Identifier: Apache-2.0
#pragma once
// The convolve -> GPU interface: a convolution fully resolved from (Filter, ConvolveOptions, input
// depth), which src/convolve/convolve.cpp builds once and both the OpenCV reference and the GPU
// variants execute; and the two GPU entries (gpu_convolve.cpp).
#include "filter/splits.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/device_image.hpp>

#include <opencv2/core/mat.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace cuconv::gpu {

struct ConvolveJob {
  cv::Mat kernel;                                     ///< CV_64F, kh x kw (the weights as cv2.filter2D would get them)
  std::vector<float> weights;                         ///< the same as float, row-major: what filter2D computes with
  std::optional<filter::SeparableFactors> separable;  ///< set when the filter is rank 1
  std::optional<filter::DenseTensorSplit> dense_tensor;  ///< `tensor`'s dense split (filter::dense_tensor_for)
  int anchor_x = 0;
  int anchor_y = 0;
  double delta = 0;  ///< --delta plus the filter's offset
  Border border = Border::reflect101;
  double border_value = 0;  ///< saturated to the input depth, as cv::copyMakeBorder does
  int output_depth = 0;     ///< CV_8U ...
  bool keep_alpha = false;
  int bench_runs = 0;                  ///< --bench: time the kernels this many more times
  std::uint64_t gpu_memory_limit = 0;  ///< bytes; 0: the device's free memory less a margin
  bool parallel_host_copies = false;   ///< staged uploads copied by the host copy pool

  [[nodiscard]] int kw() const { return kernel.cols; }
  [[nodiscard]] int kh() const { return kernel.rows; }
};

/// The GPU path for a host image: strips of it through the workspace's device images
/// (src/gpu/gpu_convolve.cpp). Buffers come from `kept_workspace` when given, else from this
/// call's own. `into`, when not empty, is an image of the result's size and type (a caller's
/// buffer, convolve_into) that the strips are downloaded into; the result's image is then `into`.
[[nodiscard]] ConvolveResult convolve_gpu(const cv::Mat& src, const ConvolveJob& job, Variant variant,
                                          WorkspaceState* kept_workspace, const cv::Mat& into = cv::Mat());

/// The GPU path for a device image: `variant` queued from `src` to `dst` on `stream`, scratch from
/// `workspace`; no host copy, no synchronisation.
void convolve_device(const ConstDeviceImageView& src, const DeviceImageView& dst, const ConvolveJob& job,
                     Variant variant, WorkspaceState& workspace, StreamHandle stream);

}  // namespace cuconv::gpu
