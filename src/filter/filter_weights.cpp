// SPDX-License-Identifier: Apache-2.0
/// @file filter_weights.cpp
/// What a loaded filter's weights say: their sum, their normalisation (--normalize), and the
/// grid --show-filter prints.
#include "filter/filter_text.hpp"

#include <cuconv/filter.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace cuconv {
namespace {

using namespace filter;

/// A sum this close to 0 or 1, relative to the weights' magnitude, is 0 or 1 written in decimals
/// (0.111 x 9) or rounded (a Gaussian's weights).
constexpr double kSumTolerance = 1e-6;

double weight_magnitude(const Filter& filter) {
  double magnitude = 0.0;
  for (const double w : filter.weights) magnitude += std::abs(w);
  return magnitude;
}

}  // namespace

double weight_sum(const Filter& filter) {
  double sum = 0.0;
  for (const double w : filter.weights) sum += w;
  return sum;
}

bool normalize_weights(Filter& filter) {
  const double sum = weight_sum(filter);
  if (std::abs(sum) <= kSumTolerance * weight_magnitude(filter)) return false;
  for (double& w : filter.weights) w /= sum;
  return true;
}

bool sums_to_neither_zero_nor_one(const Filter& filter) {
  const double sum = weight_sum(filter);
  const double tolerance = kSumTolerance * std::max(1.0, weight_magnitude(filter));
  return std::abs(sum) > tolerance && std::abs(sum - 1.0) > tolerance;
}

std::string describe_filter(const Filter& filter) {
  std::string text = filter.origin + ": " + size_text(filter.width, filter.height) + ", anchor (" +
                     std::to_string(filter.resolved_anchor_x()) + "," + std::to_string(filter.resolved_anchor_y()) +
                     "), offset " + format_g9(filter.offset) + "\n";
  // Right-align each column to its widest value so the matrix reads as a grid.
  std::vector<std::size_t> column_width(static_cast<std::size_t>(filter.width), 0);
  for (int row = 0; row < filter.height; ++row) {
    for (int col = 0; col < filter.width; ++col) {
      auto& width = column_width[static_cast<std::size_t>(col)];
      width = std::max(width, format_g9(filter.at(row, col)).size());
    }
  }
  for (int row = 0; row < filter.height; ++row) {
    for (int col = 0; col < filter.width; ++col) {
      const std::string value = format_g9(filter.at(row, col));
      text.append(column_width[static_cast<std::size_t>(col)] - value.size() + 2, ' ');
      text += value;
    }
    text += '\n';
  }
  return text;
}

}  // namespace cuconv
