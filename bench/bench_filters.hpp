// SPDX-License-Identifier: Apache-2.0
#pragma once
// The filters of the kernel benchmark (bench/cuconv_bench.cpp), one list, also read by the test
// that judges `auto` against a committed benchmark (tests/cpu/test_auto_fastest.cpp): a row's filter
// must be the same weights in both. Random dense filters come from one cv::RNG in its default
// state, drawn in the list's order, as cv::randu drew them from a fresh process's cv::theRNG()
// when the committed runs were made.
#include <cuconv/filter.hpp>

#include <opencv2/core.hpp>

#include <optional>
#include <string>
#include <vector>

namespace cuconv::bench {

struct FilterCase {
  std::string name;
  Filter filter;
};

/// A k x k filter of random weights in [-0.3, 1) / k^2 drawn from `rng`.
inline Filter random_dense(int k, cv::RNG& rng) {
  Filter f;
  f.width = f.height = k;
  f.weights.resize(static_cast<std::size_t>(k) * k);
  cv::Mat view(1, k * k, CV_64F, f.weights.data());
  rng.fill(view, cv::RNG::UNIFORM, -0.3, 1.0);
  view /= k * k;
  f.origin = "random";
  return f;
}

/// Every filter of the benchmark, in its order: random dense 3..31 (17: `tensor`'s largest dense
/// side on 8U), the gauss5 preset, gaussians 7x7 to 31x31, box 15x15 and sobel-x (rank-1 presets
/// `fast` also times on its dense path).
inline std::vector<FilterCase> bench_filters() {
  cv::RNG rng;  // the state cv::theRNG() starts from
  std::vector<FilterCase> filters;
  for (int k : {3, 5, 9, 15, 17, 31})
    filters.push_back({std::to_string(k) + "x" + std::to_string(k), random_dense(k, rng)});
  filters.push_back({"gauss5 5x5", load_filter("gauss5")});
  filters.push_back({"gaussian 7x7", load_filter("gaussian:3,1.4")});
  filters.push_back({"gaussian 9x9", load_filter("gaussian:4,1.8")});
  filters.push_back({"gaussian 15x15", load_filter("gaussian:7,2.5")});
  filters.push_back({"gaussian 31x31", load_filter("gaussian:15,5")});
  filters.push_back({"box 15x15", load_filter("box:15")});
  filters.push_back({"sobel-x 3x3", load_filter("sobel-x")});
  return filters;
}

/// A filter off the list, from a spec the CLI takes (`cuconv_bench --filter-spec`), named
/// "SPEC WxH"; load_filter's error for a bad spec.
inline FilterCase spec_filter(const std::string& spec) {
  Filter f = load_filter(spec);
  std::string name = spec + " " + std::to_string(f.width) + "x" + std::to_string(f.height);
  return {std::move(name), std::move(f)};
}

/// The spec_filter a benchmark row's filter name stands for; nullopt for a name of the list or
/// any other.
inline std::optional<FilterCase> spec_filter_named(const std::string& name) {
  const std::size_t space = name.rfind(' ');
  if (name.find(':') == std::string::npos || space == std::string::npos) return std::nullopt;
  FilterCase f = spec_filter(name.substr(0, space));
  if (f.name != name) return std::nullopt;
  return f;
}

}  // namespace cuconv::bench
