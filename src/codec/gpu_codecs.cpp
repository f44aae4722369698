// SPDX-License-Identifier: Apache-2.0
// The GPU codecs of this build, one row each, and what they share: the device image pool.
#include "codec/gpu_codec.hpp"

#include <array>

namespace cuconv::codec {

// Each codec's row, defined in its own file.
GpuCodecFormat nvjpeg_gpu_codec();

std::span<const GpuCodecFormat> gpu_codecs() noexcept {
  static const std::array<GpuCodecFormat, 1> codecs{nvjpeg_gpu_codec()};
  return codecs;
}

const GpuCodecFormat* gpu_codec_for(std::string_view input, std::string_view output) noexcept {
  for (const GpuCodecFormat& codec : gpu_codecs())
    if (codec.takes(input) && codec.takes(output)) return &codec;
  return nullptr;
}

namespace {
constexpr int kPoolTile = 256;
int round_to_tile(int n) { return (n + kPoolTile - 1) / kPoolTile * kPoolTile; }
}  // namespace

DeviceImage DeviceImagePool::take(int width, int height, int channels) {
  {
    const std::lock_guard lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      const DeviceImageView v = it->view();
      if (v.width >= width && v.height >= height && v.channels == channels && v.depth == CV_8U) {
        DeviceImage image = std::move(*it);
        free_.erase(it);
        return image;
      }
    }
  }
  return DeviceImage(round_to_tile(width), round_to_tile(height), channels, CV_8U);
}

void DeviceImagePool::give(DeviceImage image) {
  if (image.empty()) return;
  const std::lock_guard lock(mutex_);
  free_.push_back(std::move(image));
}

DeviceImageView fit(const DeviceImage& image, int width, int height) noexcept {
  DeviceImageView v = image.view();
  v.width = width;
  v.height = height;
  return v;
}

}  // namespace cuconv::codec
