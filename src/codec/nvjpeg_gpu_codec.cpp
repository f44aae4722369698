// SPDX-License-Identifier: Apache-2.0
// nvJPEG as the engine's GPU codec (gpu_codec.hpp): GpuJpegCodec's batched decode and encode, the
// JPEG file's markers walked once by its reader and carried in the plan, and the input's APP
// segments (EXIF, ICC, XMP ...) copied into the output by either encoder.
#include "codec/gpu_codec.hpp"

#include "codec/image_header.hpp"
#include "codec/jpeg_encode.hpp"
#include "codec/jpeg_markers.hpp"
#include "codec/nvjpeg_codec.hpp"
#include "codec/opencv_codecs.hpp"

#include <cuconv/error.hpp>

#include <opencv2/imgcodecs.hpp>  // the IMWRITE_ constants only (codec/opencv_codecs.hpp)

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace cuconv::codec {

namespace {

/// A JPEG file's markers, walked by its reader; their segments point into the file's bytes.
struct JpegWalk final : FileWalk {
  explicit JpegWalk(JpegMarkers m) : markers(std::move(m)) {}
  JpegMarkers markers;
};

bool is_jpeg_path(std::string_view path) {
  std::string ext(std::filesystem::path(path).extension().string());
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".jpe" || ext == ".jfif";
}

std::string unusable_reason() {
  std::string reason;
  return nvjpeg_available(&reason) ? std::string() : reason;
}

GpuCodecFile read(const std::string& path, std::uint64_t max_pixels) {
  JpegFile file = read_walked_jpeg_file(path, max_pixels);
  GpuCodecFile out;
  out.bytes = std::move(file.bytes);  // a moved vector keeps its buffer: the markers stay valid
  out.walk = std::make_unique<JpegWalk>(std::move(file.markers));
  return out;
}

/// A small baseline 4:2:0 colour JPEG: the JPEG engine's first use, paid at set-up.
std::vector<std::uint8_t> warm_up_file() {
  const cv::Mat image(16, 16, CV_8UC3, cv::Scalar(64, 128, 192));
  return codec::encode_jpeg(image, 90).value();
}

/// The APP segments of `source`'s file that `options` keeps in the output.
std::vector<std::span<const std::uint8_t>> segments(const GpuOutputOptions& options, const GpuPlan& source,
                                                    std::vector<std::string>& warnings) {
  const auto* plan = static_cast<const JpegPlan*>(source.codec_state.get());
  if (!options.keep_metadata || plan == nullptr) return {};
  return jpeg_segments_to_copy(plan->markers, &warnings);
}

/// `encoded` with the JFIF density of `source`'s file where `options` keep metadata.
std::vector<std::uint8_t> with_source_density(const GpuOutputOptions& options, const GpuPlan& source,
                                              std::vector<std::uint8_t> encoded) {
  const auto* plan = static_cast<const JpegPlan*>(source.codec_state.get());
  if (!options.keep_metadata || plan == nullptr) return encoded;
  return with_jfif_density(std::move(encoded), plan->markers);
}

class NvjpegGpuCodec final : public GpuCodec {
 public:
  explicit NvjpegGpuCodec(int device) : codec_(device) {}

  void prepare_decoder() override { codec_.prepare_decoder(); }

  GpuPlan plan(std::span<const std::uint8_t> file, std::unique_ptr<FileWalk> walk) override {
    auto* walked = dynamic_cast<JpegWalk*>(walk.get());
    auto plan = std::make_shared<JpegPlan>(walked != nullptr ? codec_.plan(file, std::move(walked->markers))
                                                             : codec_.plan(file));
    GpuPlan p;
    p.width = plan->width;
    p.height = plan->height;
    p.channels = plan->channels;
    p.not_supported = plan->not_supported;
    p.bad_file = plan->bad_file;
    p.codec_state = std::move(plan);
    return p;
  }

  std::vector<GpuDecoded> decode(const std::vector<std::span<const std::uint8_t>>& files, std::vector<GpuPlan> plans,
                                 StreamHandle stream, DeviceImagePool& pool, double* engine_call_ms) override {
    std::vector<JpegPlan> jpeg_plans;
    jpeg_plans.reserve(plans.size());
    for (const GpuPlan& p : plans) jpeg_plans.push_back(*static_cast<const JpegPlan*>(p.codec_state.get()));
    std::vector<DecodedJpeg> decoded = codec_.decode(files, stream, &pool, std::move(jpeg_plans), engine_call_ms);
    std::vector<GpuDecoded> out(decoded.size());
    for (std::size_t i = 0; i < decoded.size(); ++i) {
      out[i].image = std::move(decoded[i].image);
      out[i].view = decoded[i].view;
      out[i].not_supported = std::move(decoded[i].not_supported);
      out[i].bad_file = std::move(decoded[i].bad_file);
      out[i].decoder = decoded[i].hardware ? "nvjpeg-hardware" : "nvjpeg-cuda";
    }
    return out;
  }

  std::vector<std::uint8_t> encode(ConstDeviceImageView image, const GpuOutputOptions& options, const GpuPlan& source,
                                   StreamHandle stream, std::vector<std::string>& warnings) override {
    JpegEncodeOptions encode_options;
    encode_options.quality = options.quality;
    encode_options.app_segments = segments(options, source, warnings);
    return with_source_density(options, source, codec_.encode(image, encode_options, stream));
  }

  std::vector<std::uint8_t> encode_host(const cv::Mat& image, const GpuOutputOptions& options, const GpuPlan& source,
                                        std::vector<std::string>& warnings) override {
    std::vector<std::uint8_t> encoded;
    if (auto bytes = codec::encode_jpeg(image, options.quality))
      encoded = std::move(*bytes);
    else if (!codec::opencv_imencode(".jpg", image, encoded, {cv::IMWRITE_JPEG_QUALITY, options.quality}))
      throw Error(ErrorKind::output, "cannot encode image as JPEG");
    if (!options.keep_metadata) return encoded;
    return with_source_density(options, source, insert_app_segments(encoded, segments(options, source, warnings)));
  }

 private:
  GpuJpegCodec codec_;
};

}  // namespace

GpuCodecFormat nvjpeg_gpu_codec() {
  return {
      "nvjpeg", "JPEG", is_jpeg_path, unusable_reason, read, warm_up_file, [](int device) -> std::unique_ptr<GpuCodec> {
        return std::make_unique<NvjpegGpuCodec>(device);
      }};
}

}  // namespace cuconv::codec
