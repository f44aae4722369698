// SPDX-License-Identifier: Apache-2.0
#pragma once
// The command line's settings for the GPU codec route, in one place for both modes: which codec
// a job takes, and what its output keeps.
#include "cli/command_line.hpp"
#include "engine/gpu_codec_route.hpp"

namespace cuconv::cli {

/// What decides whether a job takes a GPU codec.
[[nodiscard]] engine::CodecRequest codec_request(const CliRequest& req, const ConvolveOptions& options);

/// Quality and metadata of the GPU codec route's output.
[[nodiscard]] codec::GpuOutputOptions gpu_output_options(const CliRequest& req);

}  // namespace cuconv::cli
