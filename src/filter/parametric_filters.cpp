// SPDX-License-Identifier: Apache-2.0
/// @file parametric_filters.cpp
/// Parametric filters (box:N, gaussian:R,SIGMA ..., one table: kParametric): each kind's weights
/// from its parameters, as docs/filters.md defines them. Failures are Error{bad_input} naming the
/// filter as given.
#include "filter/filter_text.hpp"

#include "common/names.hpp"
#include "common/whole_number.hpp"

#include <cuconv/filter.hpp>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv {
namespace {

using namespace filter;

// ---- parametric filters -----------------------------------------------------------------------
// Each kind's weights are defined in docs/filters.md; the formulas there and below are the same.

constexpr int kMaxRadius = (kMaxFilterSide - 1) / 2;

/// The fields after "NAME:", split at ',' (gaussian also takes ImageMagick's "RxSIGMA").
struct Params {
  const Source& source;
  std::vector<std::string_view> fields;

  std::string_view at(std::size_t i) const { return fields[i]; }
  double number(std::size_t i) const { return parse_number(fields[i], source, 0); }
  double positive(std::size_t i, std::string_view what) const {
    const double value = number(i);
    if (!(value > 0.0)) source.fail(0, std::string(what) + " must be greater than 0");
    return value;
  }
  int whole(std::size_t i, std::string_view what, int low, int high) const {
    const std::optional<int> value = common::parse_whole_number<int>(fields[i]);
    if (!value || *value < low || *value > high) {
      source.fail(
          0, std::string(what) + " must be an integer from " + std::to_string(low) + " to " + std::to_string(high));
    }
    return *value;
  }
};

/// The radius cv::GaussianBlur picks for ksize 0 on 8-bit images: side = round(6 SIGMA + 1) | 1.
int radius_for_sigma(double sigma, const Source& source) {
  const double side = std::round(sigma * 6.0 + 1.0);
  if (side > kMaxFilterSide) {
    source.fail(0, "SIGMA " + format_g9(sigma) + " needs a radius over " + std::to_string(kMaxRadius) +
                       " (R = 0 picks 3 SIGMA); the largest SIGMA is about 21");
  }
  return (static_cast<int>(side) | 1) / 2;
}

/// R from the spec, or from the largest sigma when R is 0.
int radius_or_auto(const Params& p, double largest_sigma) {
  const int radius = p.whole(0, "R", 0, kMaxRadius);
  return radius > 0 ? radius : radius_for_sigma(largest_sigma, p.source);
}

/// (2R+1)^2 weights, the outer product of cv::getGaussianKernel(2R+1, SIGMA): they sum to 1.
std::vector<double> gaussian_weights(int radius, double sigma) {
  const int side = 2 * radius + 1;
  const cv::Mat kernel = cv::getGaussianKernel(side, sigma, CV_64F);
  std::vector<double> weights;
  weights.reserve(static_cast<std::size_t>(side) * static_cast<std::size_t>(side));
  for (int row = 0; row < side; ++row) {
    for (int col = 0; col < side; ++col) weights.push_back(kernel.at<double>(row) * kernel.at<double>(col));
  }
  return weights;
}

/// Calls f(dx, dy, weight&) for each cell of a (2R+1)^2 filter: dx to the right and dy upwards
/// from the centre cell.
template <class F>
void for_each_cell(int radius, std::vector<double>& weights, F f) {
  const int side = 2 * radius + 1;
  for (int row = 0; row < side; ++row) {
    for (int col = 0; col < side; ++col) {
      f(col - radius, radius - row, weights[static_cast<std::size_t>(row * side + col)]);
    }
  }
}

Filter square_filter(int radius, std::vector<double> weights) {
  return make_filter(2 * radius + 1, 2 * radius + 1, std::move(weights), std::string());
}

Filter box_kind(const Params& p) {
  const int n = p.whole(0, "N", 1, kMaxFilterSide);
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  return make_filter(n, n, std::vector<double>(count, 1.0 / static_cast<double>(count)), std::string());
}

Filter gaussian_kind(const Params& p) {
  const double sigma = p.positive(1, "SIGMA");
  const int radius = radius_or_auto(p, sigma);
  return square_filter(radius, gaussian_weights(radius, sigma));
}

Filter unsharp_kind(const Params& p) {
  const double sigma = p.positive(1, "SIGMA");
  const double amount = p.number(2);
  if (amount < 0.0) p.source.fail(0, "AMOUNT must be 0 or more");
  const int radius = radius_or_auto(p, sigma);
  std::vector<double> weights = gaussian_weights(radius, sigma);
  for_each_cell(radius, weights,
                [amount](int dx, int dy, double& w) { w = (dx == 0 && dy == 0 ? 1.0 + amount : 0.0) - amount * w; });
  return square_filter(radius, std::move(weights));
}

Filter log_kind(const Params& p) {
  const double sigma = p.positive(1, "SIGMA");
  const int radius = radius_or_auto(p, sigma);
  const int side = 2 * radius + 1;
  std::vector<double> weights(static_cast<std::size_t>(side) * static_cast<std::size_t>(side));
  const double s2 = sigma * sigma;
  double gauss_sum = 0.0;
  for_each_cell(radius, weights, [&](int dx, int dy, double& w) {
    w = std::exp(-(dx * dx + dy * dy) / (2.0 * s2));
    gauss_sum += w;
  });
  double sum = 0.0;
  for_each_cell(radius, weights, [&](int dx, int dy, double& w) {
    w = w / gauss_sum * (dx * dx + dy * dy - 2.0 * s2) / (s2 * s2);
    sum += w;
  });
  const double mean = sum / static_cast<double>(weights.size());
  for (double& w : weights) w -= mean;  // a flat image gives 0
  return square_filter(radius, std::move(weights));
}

Filter dog_kind(const Params& p) {
  const double sigma1 = p.positive(1, "SIGMA1");
  const double sigma2 = p.positive(2, "SIGMA2");
  const int radius = radius_or_auto(p, std::max(sigma1, sigma2));
  std::vector<double> weights = gaussian_weights(radius, sigma1);
  const std::vector<double> wide = gaussian_weights(radius, sigma2);
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] -= wide[i];
  return square_filter(radius, std::move(weights));
}

Filter disk_kind(const Params& p) {
  const int radius = p.whole(0, "R", 1, kMaxRadius);
  const int side = 2 * radius + 1;
  std::vector<double> weights(static_cast<std::size_t>(side) * static_cast<std::size_t>(side));
  int count = 0;
  for_each_cell(radius, weights, [&](int dx, int dy, double& w) {
    w = dx * dx + dy * dy <= radius * radius ? 1.0 : 0.0;
    count += static_cast<int>(w);
  });
  for (double& w : weights) w /= count;
  return square_filter(radius, std::move(weights));
}

Filter motion_kind(const Params& p) {
  const int length = p.whole(0, "LENGTH", 1, kMaxFilterSide);
  const double angle = p.number(1);
  const int radius = (length | 1) / 2;
  const double radians = angle * 3.14159265358979323846 / 180.0;
  const double c = std::cos(radians);
  const double s = std::sin(radians);
  constexpr double kTolerance = 1e-9;  // cells exactly half a pixel off the line are on it
  const int side = 2 * radius + 1;
  std::vector<double> weights(static_cast<std::size_t>(side) * static_cast<std::size_t>(side));
  int count = 0;
  for_each_cell(radius, weights, [&](int dx, int dy, double& w) {
    const double along = dx * c + dy * s;
    const double across = -dx * s + dy * c;
    w = std::abs(across) <= 0.5 + kTolerance && std::abs(along) <= radius + kTolerance ? 1.0 : 0.0;
    count += static_cast<int>(w);
  });
  for (double& w : weights) w /= count;
  return square_filter(radius, std::move(weights));
}

/// The parametric filters: the one list that load_filter, --list-filters, the "not a filter"
/// message and the name suggestions read.
struct ParametricKind {
  ParametricFilter info;
  std::size_t params;
  Filter (*build)(const Params&);
};

constexpr ParametricKind kParametric[] = {
    {{"box", "box:N", "N x N mean"}, 1, box_kind},
    {{"gaussian", "gaussian:R,SIGMA", "Gaussian blur, (2R+1)^2; R 0: from SIGMA as cv::GaussianBlur (also RxSIGMA)"},
     2,
     gaussian_kind},
    {{"unsharp", "unsharp:R,SIGMA,AMOUNT", "sharpen: image + AMOUNT x (image - gaussian:R,SIGMA)"}, 3, unsharp_kind},
    {{"log", "log:R,SIGMA", "Laplacian of Gaussian (edges, blobs), sums to 0"}, 2, log_kind},
    {{"dog", "dog:R,SIGMA1,SIGMA2", "difference of Gaussians, gaussian:R,SIGMA1 - gaussian:R,SIGMA2"}, 3, dog_kind},
    {{"disk", "disk:R", "mean over a disc of radius R (bokeh blur)"}, 1, disk_kind},
    {{"motion", "motion:LENGTH,ANGLE", "mean along a line of LENGTH pixels at ANGLE degrees (motion blur)"},
     2,
     motion_kind},
};

/// "NAME:PARAMS" as a parametric filter (NAME in any letter case); nullopt for another NAME.
}  // namespace

std::optional<Filter> filter::load_parametric(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view name = spec.substr(0, colon);
  for (const ParametricKind& kind : kParametric) {
    if (!common::equal_ignoring_case(name, kind.info.name)) continue;
    const Source source{"filter '" + printable(spec) + "'"};
    Params params{source, {}};
    std::string_view rest = spec.substr(colon + 1);
    const bool magick = kind.build == gaussian_kind && rest.find(',') == std::string_view::npos;
    const char separator = magick ? 'x' : ',';
    while (true) {
      const std::size_t end = rest.find(separator);
      params.fields.push_back(rest.substr(0, end));
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    if (params.fields.size() != kind.params) {
      source.fail(0, "expected " + std::string(kind.info.syntax) + " (" + std::to_string(kind.params) +
                         (kind.params == 1 ? " value" : " values") + ")");
    }
    Filter filter = kind.build(params);
    if (!std::all_of(filter.weights.begin(), filter.weights.end(), finite_as_float))
      source.fail(0,
                  "the weights are not all finite numbers in float, the kernels' precision (a SIGMA too close to 0?)");
    filter.origin = std::string(spec);
    return filter;
  }
  return std::nullopt;
}

std::span<const ParametricFilter> parametric_filters() {
  static const std::vector<ParametricFilter> infos = [] {
    std::vector<ParametricFilter> out;
    for (const ParametricKind& kind : kParametric) out.push_back(kind.info);
    return out;
  }();
  return infos;
}

}  // namespace cuconv
