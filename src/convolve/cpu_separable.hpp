// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CPU's separable path for `--variant auto` without a GPU (cpu_separable.cpp): rank-1 filters
// that cv::filter2D, as the `opencv` variant calls it, provably evaluates without a rounding that
// a separable sum could order differently. Where it applies its results equal filter2D's bit for
// bit; everywhere else the CPU runs filter2D (docs/accuracy.md, "The CPU's separable path").
#include "gpu/gpu_convolve.hpp"  // ConvolveJob

#include <opencv2/core/mat.hpp>

#include <optional>
#include <vector>

namespace cuconv::convolution {

using gpu::ConvolveJob;

/// A filter as integer factors: result = saturate(acc * scale + delta), acc = sum_i vertical[i] *
/// sum_j horizontal[j] * x, whose every partial sum is an integer below 2^24 (exact in float).
struct CpuSeparablePlan {
  std::vector<int> horizontal;  ///< kw integer weights along each row
  std::vector<int> vertical;    ///< kh integer weights down the columns
  double scale = 1.0;           ///< 2^-shift (dyadic weights) or the common weight (equal weights)
  double delta = 0.0;           ///< float(job.delta): what filter2D adds
};

/// The plan for `job` on `input_depth` pixels, or nullopt where filter2D's results cannot be
/// reproduced separably. Two cases, both on 8U or 16U input and below the size at which
/// filter2D as called switches to its DFT:
/// * dyadic weights (the float weights and float delta are integers times 2^-s, rank 1 in
///   integers) whose every product and partial sum is exact in float (max input * sum |W| +
///   |D| < 2^24 in units of 2^-s): filter2D's float sum is then the exact sum, in any order, for
///   every output depth (gauss3/5/7, Sobel, Scharr, box:2/4/8);
/// * equal weights w (boxes) with an integer output: the exact value S * w + delta of every
///   window sum S the input allows lies farther from a tie n + 1/2 than filter2D's float
///   rounding can move it, so both round to the same integer (box:3, box:5 ... box:11).
[[nodiscard]] std::optional<CpuSeparablePlan> cpu_separable_plan(const ConvolveJob& job, int input_depth);

/// filter2D's result for `job` through `plan`: the border padded as the `opencv` variant pads it
/// (cv::copyMakeBorder), cv::sepFilter2D's exact float sums of the integer factors, one scaling
/// and rounding (convertTo); with keep_alpha
/// on 4 channels alpha is passed through converted to the output depth. `into`, when not empty,
/// is the caller's image of the result's size and type to write into (convolve_into).
[[nodiscard]] cv::Mat convolve_cpu_separable(const cv::Mat& src, const ConvolveJob& job, const CpuSeparablePlan& plan,
                                             const cv::Mat& into = cv::Mat());

}  // namespace cuconv::convolution
