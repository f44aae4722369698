// SPDX-License-Identifier: Apache-2.0
// GpuJpegCodec for builds without nvjpeg.h (scripts/install-deps.sh fetches it): the GPU codec
// is reported unusable, so `--codec auto` uses OpenCV and `--codec gpu` exits with the reason.
#include "codec/nvjpeg_codec.hpp"

#include <cuconv/error.hpp>

namespace cuconv::codec {

namespace {
constexpr const char* kReason = "this cuconv was built without nvjpeg.h (run scripts/install-deps.sh, then rebuild)";
}

bool nvjpeg_available(std::string* reason) {
  if (reason != nullptr) *reason = kReason;
  return false;
}

struct GpuJpegCodec::State {};

GpuJpegCodec::GpuJpegCodec(int) { throw Error(ErrorKind::gpu, kReason); }
GpuJpegCodec::~GpuJpegCodec() = default;
GpuJpegCodec::GpuJpegCodec(GpuJpegCodec&&) noexcept = default;
GpuJpegCodec& GpuJpegCodec::operator=(GpuJpegCodec&&) noexcept = default;
std::string_view GpuJpegCodec::backend() const noexcept { return "none"; }
void GpuJpegCodec::prepare_decoder() { throw Error(ErrorKind::gpu, kReason); }
JpegPlan GpuJpegCodec::plan(std::span<const std::uint8_t>) { throw Error(ErrorKind::gpu, kReason); }
JpegPlan GpuJpegCodec::plan(std::span<const std::uint8_t>, JpegMarkers) { throw Error(ErrorKind::gpu, kReason); }
std::vector<DecodedJpeg> GpuJpegCodec::decode(const std::vector<std::span<const std::uint8_t>>&, StreamHandle,
                                              DeviceImagePool*, std::vector<JpegPlan>, double*) {
  throw Error(ErrorKind::gpu, kReason);
}
std::vector<std::uint8_t> GpuJpegCodec::encode(ConstDeviceImageView, const JpegEncodeOptions&, StreamHandle) {
  throw Error(ErrorKind::gpu, kReason);
}

}  // namespace cuconv::codec
