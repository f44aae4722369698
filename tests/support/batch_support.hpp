// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers the batch-mode suites share: the expected gauss5 result, a JSON summary read back, and
// the exit code an engine call's error maps to.
#include "test_support.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include <string>

namespace cuconv::test {

/// What `cuconv ... --filter gauss5 --variant opencv` writes for `image`.
inline cv::Mat gauss5(const cv::Mat& image) {
  const Filter f = load_filter("gauss5");
  cv::Mat out;
  cv::filter2D(image, out, -1, kernel_matrix(f), cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
  return out;
}

/// The JSON document in the file `path` (a batch's --json summary).
inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

/// The exit code `call`'s cuconv::Error maps to, ExitCode::ok when it throws none.
template <class F>
ExitCode usage_error_of(F&& call) {
  try {
    call();
  } catch (const Error& e) {
    return exit_code_for(e.kind());
  }
  return ExitCode::ok;
}

}  // namespace cuconv::test
