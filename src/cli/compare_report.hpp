// SPDX-License-Identifier: Apache-2.0
#pragma once
// Single-image mode's reports on a filtered result: --bench (kernel median, bandwidth, share of
// a device copy) and --compare (the result against cv::filter2D and the pass rule), printed to
// the session's standard output.
#include "cli/command_line.hpp"
#include "cli/session.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core.hpp>

#include <string>

namespace cuconv::cli {

/// The libraries that read the input and will write the output ("libjpeg", "opencv" ...), for
/// --compare --json's report.
struct Codecs {
  std::string decoder;
  std::string encoder;
};

/// Prints --bench's line and --compare's report for `result` (filtered from `input`); returns
/// ExitCode::compare_mismatch when --compare finds it outside the rule, else ok. Throws
/// Error{gpu} when they need a GPU result and `result` came from OpenCV (`no_gpu_reason` says why).
[[nodiscard]] ExitCode report_bench_and_compare(const CliRequest& req, const cv::Mat& input,
                                                const ConvolveResult& result, const Filter& filter,
                                                const ConvolveOptions& options, const std::string& no_gpu_reason,
                                                const Codecs& codecs, Session& session);

}  // namespace cuconv::cli
