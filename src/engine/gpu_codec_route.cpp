// SPDX-License-Identifier: Apache-2.0
// The GPU codec route's decision (gpu_codec_route.hpp): which jobs take a GPU codec. The pipeline
// itself is in gpu_codec_pipeline.cpp.
#include "engine/gpu_codec_route.hpp"

#include <cuconv/error.hpp>

#include <algorithm>
#include <thread>

namespace cuconv::engine {

std::string gpu_codec_unusable_reason(const codec::GpuCodecFormat& codec) {
  std::string reason;
  if (!cuda_device_available(&reason)) return "no usable CUDA device (" + reason + ")";
  return codec.unusable_reason();
}

std::size_t auto_gpu_codec_threshold(std::size_t cpu_threads) {
  if (cpu_threads == 0) cpu_threads = std::max(1U, std::thread::hardware_concurrency());
  return std::max<std::size_t>(64, 16 * cpu_threads);
}

const codec::GpuCodecFormat* choose_gpu_codec(
    const CodecRequest& request, const std::string& input, const std::string& output,
    const std::function<std::string(const codec::GpuCodecFormat&)>& gpu_unusable_reason) {
  if (request.codec == common::Codec::opencv) return nullptr;
  const codec::GpuCodecFormat* codec = codec::gpu_codec_for(input, output);
  if (codec == nullptr) return nullptr;
  if (request.codec == common::Codec::automatic && !request.gpu_codec_warm &&
      request.gpu_codec_jobs < auto_gpu_codec_threshold(request.cpu_threads))
    return nullptr;
  const std::string format(codec->format);
  std::string why_not;
  if (request.variant == Variant::opencv)
    why_not = "`variant` opencv filters on the CPU";
  else if (request.depth != Depth::same && request.depth != Depth::u8)
    why_not = format + " holds 8-bit pixels only";
  else if (request.host_features)
    why_not = "`compare` and `bench_runs` work on host images";
  else if (request.auto_orient)
    why_not = "`auto_orient` is applied on the OpenCV path";
  if (!why_not.empty()) {
    if (request.codec == common::Codec::gpu)
      throw Error(ErrorKind::usage, "`codec` gpu: " + why_not + "; use `codec` opencv");
    return nullptr;
  }
  if (const std::string reason = gpu_unusable_reason(*codec); !reason.empty()) {
    if (request.codec == common::Codec::gpu)
      throw Error(ErrorKind::gpu, "`codec` gpu: the GPU " + format + " codec cannot be used: " + reason);
    return nullptr;
  }
  return codec;
}

}  // namespace cuconv::engine
