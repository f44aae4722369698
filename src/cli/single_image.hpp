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

/// Single-image mode with --skip-existing: the line to print ("OUTPUT exists; skipped
/// (--skip-existing)") when the output file exists (a regular file or a link, as the refusal
/// without --overwrite has it), so the run ends there with exit 0 before the input is read;
/// nullopt when the run goes on (no --skip-existing, no such file, or standard output). Asks
/// `files` (the command's: its client's when served).
[[nodiscard]] std::optional<std::string> skipped_existing_output(const CliRequest& request, engine::Files& files);

/// Filters one image as `req` asks; returns the exit code (errors are thrown as cuconv::Error).
[[nodiscard]] ExitCode run_single_image(const CliRequest& req, const ConvolveOptions& options, Session& session);

}  // namespace cuconv::cli
