// SPDX-License-Identifier: Apache-2.0
// Command line -> GPU JPEG path settings (codec_options.hpp).
#include "cli/codec_options.hpp"

#include <cuconv/image_io.hpp>

namespace cuconv::cli {

codec::CodecRequest codec_request(const CliRequest& req, const ConvolveOptions& options) {
  codec::CodecRequest request;
  request.codec = *codec::parse_codec(req.codec);  // CLI11 checked membership
  request.variant = options.variant;
  request.depth = options.depth;
  request.host_features = req.compare || req.bench_runs > 0;
  // The GPU path does not rotate, so --auto-orient sends JPEG jobs to OpenCV.
  request.auto_orient = req.auto_orient;
  return request;
}

codec::JpegOutputOptions jpeg_output_options(const CliRequest& req) {
  codec::JpegOutputOptions output;
  output.quality = req.quality.value_or(kDefaultJpegQuality);
  output.keep_metadata = !req.strip_metadata;  // --strip drops the APP segments
  return output;
}

}  // namespace cuconv::cli
