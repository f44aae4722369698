// SPDX-License-Identifier: Apache-2.0
// The GPU JPEG path's decisions and file reading (jpeg_filter.hpp): which jobs take the GPU codec,
// and a JPEG file's bytes after the same checks as OpenCV's path. The pipeline itself is in
// jpeg_pipeline.cpp.
#include "engine/gpu_jpeg_route.hpp"

#include "gpu/memory/device_memory.hpp"
#include "codec/image_header.hpp"
#include "codec/nvjpeg_codec.hpp"


#include <algorithm>
#include <cctype>
#include <filesystem>
#include <thread>

namespace cuconv::codec {

bool is_jpeg_path(std::string_view path) {
  std::string ext(std::filesystem::path(path).extension().string());
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".jpe" || ext == ".jfif";
}

std::string gpu_codec_unusable_reason() {
  std::string reason;
  if (!cuda_device_available(&reason)) return "no usable CUDA device (" + reason + ")";
  if (!nvjpeg_available(&reason)) return reason;
  return {};
}

std::size_t auto_gpu_codec_threshold(std::size_t cpu_threads) {
  if (cpu_threads == 0) cpu_threads = std::max(1U, std::thread::hardware_concurrency());
  return std::max<std::size_t>(64, 16 * cpu_threads);
}

bool choose_gpu_codec(const CodecRequest& request, const std::string& input, const std::string& output,
                      const std::function<std::string()>& gpu_unusable_reason) {
  if (request.codec == Codec::opencv || !is_jpeg_path(input) || !is_jpeg_path(output)) return false;
  if (request.codec == Codec::automatic && !request.gpu_codec_warm &&
      request.jpeg_jobs < auto_gpu_codec_threshold(request.cpu_threads))
    return false;
  std::string why_not;
  if (request.variant == Variant::opencv) why_not = "--variant opencv filters on the CPU";
  else if (request.depth != Depth::same && request.depth != Depth::u8) why_not = "JPEG holds 8-bit pixels only";
  else if (request.host_features) why_not = "--compare and --bench work on host images";
  else if (request.auto_orient) why_not = "--auto-orient is applied on the OpenCV path";
  if (!why_not.empty()) {
    if (request.codec == Codec::gpu) throw Error(ErrorKind::usage, "--codec gpu: " + why_not + "; use --codec opencv");
    return false;
  }
  if (const std::string reason = gpu_unusable_reason(); !reason.empty()) {
    if (request.codec == Codec::gpu) throw Error(ErrorKind::gpu, "--codec gpu: the GPU JPEG codec cannot be used: " + reason);
    return false;
  }
  return true;
}

}  // namespace cuconv::codec
