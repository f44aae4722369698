// SPDX-License-Identifier: Apache-2.0
#pragma once
// Batch mode of the command line (`cuconv --out-dir DIR IN...`): running the batch engine
// (src/engine/batch_pipeline.hpp) with log lines, a progress line and the JSON summary. Its options are parsed with
// the others in cli/command_line.cpp.
#include "cli/command_line.hpp"
#include "cli/session.hpp"
#include "engine/gpu_codec_route.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <chrono>

namespace cuconv::cli {

/// Runs a batch; `filter` is unused with --no-filter. Returns the process exit code; throws
/// cuconv::Error for problems found before any image is written (usage, no inputs, name clashes,
/// no usable GPU for an explicit variant). `session.started` gives the JSON summary's startup_ms.
/// `codec` and `gpu_output` steer the GPU codec route (cli/codec_options.hpp).
[[nodiscard]] ExitCode run_batch_command(const BatchRequest& request, const Filter& filter,
                                         const ConvolveOptions& options, const engine::CodecRequest& codec,
                                         const codec::GpuOutputOptions& gpu_output, Session& session);

}  // namespace cuconv::cli
