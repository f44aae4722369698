// SPDX-License-Identifier: Apache-2.0
#pragma once
// Single-image mode: `cuconv IN OUT ...` through the engine's per-image operation.
#include "cli/command_line.hpp"
#include "cli/session.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <string>

namespace cuconv::cli {

/// The filter `spec` names; a filter file is read through `files` (the client's, when served).
[[nodiscard]] Filter load_filter_through(engine::Files& files, const std::string& spec,
                                         const FilterLoadOptions& options = {});

/// Filters one image as `req` asks; returns the exit code (errors are thrown as cuconv::Error).
[[nodiscard]] ExitCode run_single_image(const CliRequest& req, const ConvolveOptions& options, Session& session);

}  // namespace cuconv::cli
