// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file params.hpp
/// The plain (host- and device-usable) description of one convolution, shared by the kernels and
/// the host code that launches them. No CUDA headers.
#include <cuconv/filter.hpp>  // kMaxFilterSide

#include <cstddef>

namespace cuconv::kernels {

/// Border rules, numbered as the public enum cuconv::Border.
enum class BorderRule : int { reflect101 = 0, reflect = 1, replicate = 2, constant = 3, wrap = 4 };

/// Radius value meaning "filter size known only at run time" (the generic instantiation).
inline constexpr int kRuntimeRadius = -1;

/// Most weights a filter can have; the largest (127 x 127 floats) fills 64516 of the 65536 bytes
/// of constant memory a module may use.
inline constexpr int kMaxFilterTaps = cuconv::kMaxFilterSide * cuconv::kMaxFilterSide;

/// Largest gridDim.y; kernels loop over tile rows beyond it so tall images need no special case.
inline constexpr int kMaxGridY = 65535;

/// Everything about one convolution besides the planes and the weights.
struct ConvParams {
  int kw;        ///< filter columns
  int kh;        ///< filter rows
  int anchor_x;  ///< output (x, y) reads input columns x - anchor_x .. x - anchor_x + kw - 1
  int anchor_y;  ///< ... and rows y - anchor_y .. y - anchor_y + kh - 1
  float delta;   ///< added before rounding, as cv::filter2D's delta
  BorderRule border;
  float border_value;  ///< already saturated to the input type, as cv::copyMakeBorder does
};

}  // namespace cuconv::kernels
