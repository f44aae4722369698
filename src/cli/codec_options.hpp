// SPDX-License-Identifier: Apache-2.0
#pragma once
// The command line's settings for the GPU JPEG path (issue 25), in one place for both modes:
// which codec a job takes, and the JPEG output settings.
#include "cli/command_line.hpp"
#include "engine/gpu_jpeg_route.hpp"

namespace cuconv::cli {

/// What decides whether a JPEG -> JPEG job takes the GPU codec.
[[nodiscard]] codec::CodecRequest codec_request(const CliRequest& req, const ConvolveOptions& options);

/// Quality and metadata of the JPEG path's output.
[[nodiscard]] codec::JpegOutputOptions jpeg_output_options(const CliRequest& req);

}  // namespace cuconv::cli
