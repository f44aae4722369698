// SPDX-License-Identifier: Apache-2.0
// Command line -> GPU codec route settings (codec_options.hpp).
#include "cli/codec_options.hpp"

#include <cuconv/image_io.hpp>

namespace cuconv::cli {

engine::CodecRequest codec_request(const CliRequest& req, const ConvolveOptions& options) {
  engine::CodecRequest request;
  request.codec = *common::parse_codec(req.codec);  // CLI11 checked membership
  request.variant = options.variant;
  request.depth = options.depth;
  request.host_features = req.compare || req.bench_runs > 0;
  // The GPU codec route does not rotate, so --auto-orient sends its jobs to OpenCV.
  request.auto_orient = req.auto_orient;
  return request;
}

codec::GpuOutputOptions gpu_output_options(const CliRequest& req) {
  codec::GpuOutputOptions output;
  output.quality = req.quality.value_or(kDefaultJpegQuality);
  output.keep_metadata = !req.strip_metadata;  // --strip drops the input's metadata
  return output;
}

}  // namespace cuconv::cli
