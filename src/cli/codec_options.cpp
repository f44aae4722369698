// Command line -> GPU JPEG path settings (codec_options.hpp).
#include "cli/codec_options.hpp"

namespace cuconv::cli {

codec::CodecRequest codec_request(const CliRequest& req, const ConvolveOptions& options) {
  codec::CodecRequest request;
  request.codec = *codec::parse_codec(req.codec);  // CLI11 checked membership
  request.variant = options.variant;
  request.depth = options.depth;
  request.host_features = req.compare || req.bench_runs > 0;
  // LEAD (after merging io23): request.auto_orient = req.auto_orient;
  // the GPU path does not rotate, so --auto-orient sends JPEG jobs to OpenCV.
  request.auto_orient = false;
  return request;
}

codec::JpegOutputOptions jpeg_output_options([[maybe_unused]] const CliRequest& req) {
  codec::JpegOutputOptions output;
  // LEAD (after merging io23): output.quality = req.quality;  (--quality N, default 95)
  //                            output.keep_metadata = !req.strip;  (--strip drops the APP segments)
  output.quality = 95;
  output.keep_metadata = true;
  return output;
}

}  // namespace cuconv::cli
