// SPDX-License-Identifier: Apache-2.0
// The GPU JPEG path's decisions and file reading (jpeg_filter.hpp): which jobs take the GPU codec,
// and a JPEG file's bytes after the same checks as OpenCV's path. The pipeline itself is in
// jpeg_pipeline.cpp.
#include "engine/gpu_jpeg_route.hpp"

#include "gpu/memory/device_memory.hpp"
#include "codec/nvjpeg_codec.hpp"

#include <cuconv/image_io.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
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
  if (request.codec == Codec::automatic && request.jpeg_jobs < auto_gpu_codec_threshold(request.cpu_threads))
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

std::vector<std::uint8_t> read_jpeg_file(const std::string& path, std::uint64_t max_pixels) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    // read_image's own messages for missing files, folders and the like.
    static_cast<void>(read_image(path, {max_pixels}));
  }
  check_image_header(path, {max_pixels});
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    static_cast<void>(read_image(path, {max_pixels}));  // its message says why (permissions ...)
    throw Error(ErrorKind::bad_input, path + ": cannot open the file");
  }
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorKind::bad_input, path + ": cannot read the file");
  if (bytes.empty()) throw Error(ErrorKind::bad_input, path + ": empty file");
  return bytes;
}

}  // namespace cuconv::codec
