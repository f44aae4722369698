// SPDX-License-Identifier: Apache-2.0
// filter_splits: separable_for and dense_tensor_for of a request (filter/rank1_splits.cpp,
// filter/dense_splits.cpp), answered from this thread's recent requests when it is one of them.
#include "filter/splits.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

namespace cuconv::filter {

namespace {

std::atomic<std::uint64_t> split_computations{0};

}  // namespace

FilterSplits filter_splits(const std::vector<double>& weights, int kw, int kh, int input_depth, int output_depth,
                           double delta) {
  // This thread's recent answers, least recently used first (as launch_fft.cu keeps its plans and
  // filter spectra): a batch's worker threads each work a filter out once.
  struct Entry {
    std::vector<double> weights;
    int kw, kh, input_depth, output_depth;
    double delta;
    FilterSplits splits;
  };
  thread_local std::vector<Entry> recent;
  const auto found = std::find_if(recent.begin(), recent.end(), [&](const Entry& e) {
    return e.kw == kw && e.kh == kh && e.input_depth == input_depth && e.output_depth == output_depth &&
           std::memcmp(&e.delta, &delta, sizeof delta) == 0 && e.weights.size() == weights.size() &&
           std::memcmp(e.weights.data(), weights.data(), sizeof(double) * weights.size()) == 0;
  });
  if (found != recent.end()) {
    std::rotate(found, found + 1, recent.end());  // now the most recently used
    return recent.back().splits;
  }
  if (recent.size() == kFilterSplitsKept) recent.erase(recent.begin());
  recent.push_back({weights,
                    kw,
                    kh,
                    input_depth,
                    output_depth,
                    delta,
                    {separable_for(weights, kw, kh, input_depth, output_depth, delta),
                     dense_tensor_for(weights, kw, kh, input_depth, output_depth, delta)}});
  split_computations.fetch_add(1, std::memory_order_relaxed);
  return recent.back().splits;
}

std::uint64_t filter_split_computations() noexcept { return split_computations.load(std::memory_order_relaxed); }

}  // namespace cuconv::filter
