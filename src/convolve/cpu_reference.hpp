// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `opencv` variant and the border value every variant pads with (cpu_reference.cpp).
#include "gpu/gpu_convolve.hpp"  // ConvolveJob

#include <cuconv/convolve.hpp>

#include <opencv2/core/mat.hpp>

namespace cuconv::convolution {

using gpu::ConvolveJob;

/// The constant border's value as the input type stores it, which is what every variant pads
/// with: saturated and rounded half to even for 8U and 16U (cv::copyMakeBorder's
/// cv::saturate_cast), rounded to float otherwise. The exact sum that judges a result must use
/// this value, not the option's: 901.25 around a 16-bit image is 901.
[[nodiscard]] double stored_border_value(double value, int input_depth);

/// cv::filter2D with the job's semantics, `wrap` and non-zero constant borders by padding.
/// Channels are filtered together (filter2D treats them independently). `into`, when not empty,
/// is an image of the result's size and type (a caller's buffer, convolve_into) that filter2D
/// writes into; the returned image is then `into` itself.
[[nodiscard]] cv::Mat convolve_opencv(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method,
                                      const cv::Mat& into = cv::Mat());

}  // namespace cuconv::convolution
