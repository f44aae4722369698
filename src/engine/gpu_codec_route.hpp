// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which jobs take a GPU codec (codec/gpu_codec.hpp; nvJPEG for JPEG) rather than the host route:
// the one place that decides it is choose_gpu_codec() (gpu_codec_route.cpp). The pipeline that
// runs them is gpu_codec_pipeline.hpp; a server's warm pipelines are warm_gpu.hpp.
#include "codec/gpu_codec.hpp"
#include "common/codec_names.hpp"

#include <cuconv/convolve.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace cuconv::engine {

/// What decides the codec for a job besides the file names.
struct CodecRequest {
  common::Codec codec = common::Codec::automatic;
  Variant variant = Variant::automatic;  ///< --variant opencv filters on the CPU
  Depth depth = Depth::same;
  bool host_features = false;  ///< --compare or --bench: they work on host images
  /// --auto-orient: the GPU path does not rotate pixels, so it is not chosen then.
  bool auto_orient = false;
  /// Jobs in the run a GPU codec could take (1 in single-image mode) and the CPU threads OpenCV's
  /// codec would have (--jobs; 0: the machine's): what Codec::automatic weighs.
  std::size_t gpu_codec_jobs = 1;
  std::size_t cpu_threads = 0;
  /// The GPU codecs are set up already (a server's WarmGpuCodecs): Codec::automatic takes one for
  /// any job it can do, since no set-up is left to weigh.
  bool gpu_codec_warm = false;
};

/// The fewest jobs a GPU codec can take for which `--codec auto` takes it: 16 per CPU thread of
/// OpenCV's codec, at least 64. Below it the GPU codec's set-up (CUDA context, the library's
/// handle and states: most of a second) costs more than its speed saves (docs/gpu-jpeg.md,
/// "Which path").
[[nodiscard]] std::size_t auto_gpu_codec_threshold(std::size_t cpu_threads);

/// The GPU codec `input` -> `output` goes through, or nullptr (the host route): the files' own
/// codec (gpu_codec_for) under Codec::gpu, or under Codec::automatic for a run of at least
/// auto_gpu_codec_threshold() jobs a GPU codec can take (any, when warm) when it can be used.
/// `gpu_unusable_reason` is asked only for a job a GPU codec can take: empty when a CUDA device
/// and the codec's library can be used, else why not (gpu_codec_unusable_reason in production, a
/// fixed answer in tests). Throws Error{gpu} (exit 5) for Codec::gpu when the codec cannot be
/// used, and Error{usage} for Codec::gpu with a job it cannot do (--variant opencv ...).
[[nodiscard]] const codec::GpuCodecFormat* choose_gpu_codec(
    const CodecRequest& request, const std::string& input, const std::string& output,
    const std::function<std::string(const codec::GpuCodecFormat&)>& gpu_unusable_reason);

/// Empty when a CUDA device and `codec`'s library can be used, else why not.
[[nodiscard]] std::string gpu_codec_unusable_reason(const codec::GpuCodecFormat& codec);

}  // namespace cuconv::engine
