// nvJPEG decode and encode for GpuJpegCodec (jpeg_codec.hpp). Baseline colour files go to the
// GPU's JPEG engine in one batched call when the GPU has one (nvJPEG's hardware backend); the
// others (progressive, gray, subsamplings the engine lacks) and every file on GPUs without an
// engine go through nvjpegDecode on the default backend, one at a time. Decoded pixels are
// written straight into pitched DeviceImages, interleaved BGR like OpenCV's.
#include "gpu/jpeg_codec.hpp"

#include "codec/jpeg_markers.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/nvjpeg_api.hpp"

#include <cuconv/error.hpp>

#include <opencv2/core/hal/interface.h>

#include <map>
#include <mutex>
#include <utility>

namespace cuconv::codec {

using detail::check_nvjpeg;
using detail::NvjpegApi;

bool nvjpeg_available(std::string* reason) { return detail::nvjpeg_api(reason) != nullptr; }

namespace {

/// A move-only nvJPEG handle or state released with its nvJPEG destroy function (whose status
/// is ignored: destructors never throw).
template <class Handle>
class NvjpegOwned {
 public:
  using Destroy = nvjpegStatus_t (*)(Handle);
  NvjpegOwned() = default;
  NvjpegOwned(Handle handle, Destroy destroy) : handle_(handle), destroy_(destroy) {}
  NvjpegOwned(NvjpegOwned&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), destroy_(other.destroy_) {}
  NvjpegOwned& operator=(NvjpegOwned&& other) noexcept {
    std::swap(handle_, other.handle_);
    std::swap(destroy_, other.destroy_);
    return *this;
  }
  NvjpegOwned(const NvjpegOwned&) = delete;
  NvjpegOwned& operator=(const NvjpegOwned&) = delete;
  ~NvjpegOwned() {
    if (handle_ != nullptr) destroy_(handle_);
  }
  [[nodiscard]] Handle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  Handle handle_ = nullptr;
  Destroy destroy_ = nullptr;
};

/// What a decode status means for the file: decoded, not for nvJPEG (OpenCV decodes it), or a
/// broken file. Anything else is a GPU failure and throws.
enum class Outcome { decoded, not_supported, bad_file };

Outcome classify(nvjpegStatus_t status, const char* call) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS: return Outcome::decoded;
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return Outcome::not_supported;
    case NVJPEG_STATUS_BAD_JPEG:
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return Outcome::bad_file;
    default: check_nvjpeg(status, call);
  }
  return Outcome::decoded;  // not reached: check_nvjpeg threw
}

unsigned char* bytes_of(const std::byte* data) {
  return reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data));
}

}  // namespace

/// The nvJPEG library handles of one device (default backend, and hardware backend where the
/// GPU has a JPEG engine). Creating one takes a large part of a second, so every codec of a
/// device shares them (nvJPEG handles are thread-safe; the states made from them are per codec).
struct DeviceHandles {
  nvjpegHandle_t handle = nullptr;
  nvjpegHandle_t hw_handle = nullptr;
};

/// The shared handles of `device`, made on first use. They live until the process ends and are
/// never destroyed: at exit the CUDA context they belong to may already be gone.
const DeviceHandles& device_handles(const NvjpegApi& api, int device) {
  static std::mutex mutex;
  static auto* const handles = new std::map<int, DeviceHandles>;
  const std::lock_guard lock(mutex);
  if (const auto it = handles->find(device); it != handles->end()) return it->second;
  DeviceHandles made;
  CUCONV_NVJPEG_TRY(api.create_ex(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &made.handle));
  // The hardware backend exists only on GPUs with a JPEG engine (A100, H100 ...); elsewhere its
  // creation fails and every file takes the default backend.
  if (api.create_ex(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &made.hw_handle) != NVJPEG_STATUS_SUCCESS)
    made.hw_handle = nullptr;
  return handles->emplace(device, made).first->second;
}

struct GpuJpegCodec::State {
  const NvjpegApi* api = nullptr;
  nvjpegHandle_t handle = nullptr;     ///< default backend: single-file decode and encode (shared)
  nvjpegHandle_t hw_handle = nullptr;  ///< hardware backend, shared; null without a JPEG engine
  NvjpegOwned<nvjpegJpegState_t> state;
  NvjpegOwned<nvjpegJpegState_t> hw_state;
  NvjpegOwned<nvjpegJpegStream_t> hw_stream;
  NvjpegOwned<nvjpegEncoderParams_t> params;
  NvjpegOwned<nvjpegEncoderState_t> encoder;
  std::size_t hw_batch_size = 0;  ///< the batch size hw_state is initialised for; 0: none

  /// nvjpegDecode of file `index` into `image`; records the outcome in `result`.
  void decode_one(std::span<const std::uint8_t> file, int channels, nvjpegImage_t& image, DecodedJpeg& result,
                  StreamHandle stream) const {
    const nvjpegStatus_t status =
        api->decode(handle, state.get(), file.data(), file.size(),
                    channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_BGRI, &image, stream);
    const Outcome outcome = classify(status, "nvjpegDecode");
    // The state's staging buffers serve the next file: let this one's device work finish first.
    CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    if (outcome == Outcome::decoded) return;
    const std::string why = std::string("nvJPEG: ") + detail::nvjpeg_status_name(status);
    if (outcome == Outcome::not_supported) result.not_supported = why;
    else result.bad_file = "cannot decode JPEG: truncated or corrupt (" + why + ")";
    result.image = DeviceImage();
    result.view = {};
  }
};

GpuJpegCodec::GpuJpegCodec(int device) : state_(std::make_unique<State>()) {
  State& s = *state_;
  std::string reason;
  s.api = detail::nvjpeg_api(&reason);
  if (s.api == nullptr) throw Error(ErrorKind::gpu, reason);
  const NvjpegApi& api = *s.api;
  if (device >= 0) CUCONV_CUDA_TRY(cudaSetDevice(device));
  int current = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&current));
  const DeviceHandles& shared = device_handles(api, current);
  s.handle = shared.handle;
  s.hw_handle = shared.hw_handle;
  if (s.hw_handle != nullptr) {
    nvjpegJpegState_t hw_state = nullptr;
    CUCONV_NVJPEG_TRY(api.state_create(s.hw_handle, &hw_state));
    s.hw_state = {hw_state, api.state_destroy};
    nvjpegJpegStream_t stream = nullptr;
    CUCONV_NVJPEG_TRY(api.stream_create(s.hw_handle, &stream));
    s.hw_stream = {stream, api.stream_destroy};
  }
  nvjpegJpegState_t state = nullptr;
  CUCONV_NVJPEG_TRY(api.state_create(s.handle, &state));
  s.state = {state, api.state_destroy};
  nvjpegEncoderParams_t params = nullptr;
  CUCONV_NVJPEG_TRY(api.encoder_params_create(s.handle, &params, nullptr));
  s.params = {params, api.encoder_params_destroy};
  nvjpegEncoderState_t encoder = nullptr;
  CUCONV_NVJPEG_TRY(api.encoder_state_create(s.handle, &encoder, nullptr));
  s.encoder = {encoder, api.encoder_state_destroy};
}

GpuJpegCodec::~GpuJpegCodec() = default;
GpuJpegCodec::GpuJpegCodec(GpuJpegCodec&&) noexcept = default;
GpuJpegCodec& GpuJpegCodec::operator=(GpuJpegCodec&&) noexcept = default;

std::string_view GpuJpegCodec::backend() const noexcept { return state_->hw_handle != nullptr ? "hardware" : "cuda"; }

DeviceImage reuse_or_allocate(std::vector<DeviceImage>* spare, int width, int height, int channels) {
  if (spare != nullptr) {
    for (auto it = spare->begin(); it != spare->end(); ++it) {
      const DeviceImageView v = it->view();
      if (v.width >= width && v.height >= height && v.channels == channels && v.depth == CV_8U) {
        DeviceImage image = std::move(*it);
        spare->erase(it);
        return image;
      }
    }
  }
  constexpr int kTile = 256;
  const auto round_up = [](int n) { return (n + kTile - 1) / kTile * kTile; };
  return DeviceImage(round_up(width), round_up(height), channels, CV_8U);
}

DeviceImageView fit(const DeviceImage& image, int width, int height) noexcept {
  DeviceImageView v = image.view();
  v.width = width;
  v.height = height;
  return v;
}

std::vector<DecodedJpeg> GpuJpegCodec::decode(const std::vector<std::span<const std::uint8_t>>& files,
                                              StreamHandle stream, std::vector<DeviceImage>* spare) {
  State& s = *state_;
  const NvjpegApi& api = *s.api;
  std::vector<DecodedJpeg> out(files.size());
  std::vector<nvjpegImage_t> destinations(files.size(), nvjpegImage_t{});
  std::vector<int> channels(files.size(), 0);
  std::vector<std::size_t> hardware;  // files for the JPEG engine's batch
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::span<const std::uint8_t> file = files[i];
    const JpegMarkers markers = read_jpeg_markers(file);
    if (file.size() < 2 || file[0] != 0xFF || file[1] != 0xD8) {  // another format named .jpg
      out[i].not_supported = "not a JPEG stream";
      continue;
    }
    if (!markers.valid) {
      out[i].bad_file = "cannot decode JPEG: truncated or corrupt (" + markers.defect + ")";
      continue;
    }
    if (std::string why = gpu_decode_obstacle(markers); !why.empty()) {
      out[i].not_supported = std::move(why);
      continue;
    }
    int components = 0;
    nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
    int widths[NVJPEG_MAX_COMPONENT] = {};
    int heights[NVJPEG_MAX_COMPONENT] = {};
    const nvjpegStatus_t info =
        api.get_image_info(s.handle, file.data(), file.size(), &components, &subsampling, widths, heights);
    if (info != NVJPEG_STATUS_SUCCESS) {
      out[i].bad_file = std::string("cannot decode JPEG: nvJPEG cannot read its header (") +
                        detail::nvjpeg_status_name(info) + ")";
      continue;
    }
    if (components == 3 && subsampling == NVJPEG_CSS_UNKNOWN) {
      out[i].not_supported = "unusual chroma subsampling";
      continue;
    }
    channels[i] = components == 1 ? 1 : 3;
    out[i].image = reuse_or_allocate(spare, widths[0], heights[0], channels[i]);
    out[i].view = fit(out[i].image, widths[0], heights[0]);
    destinations[i].channel[0] = bytes_of(out[i].view.data);
    destinations[i].pitch[0] = out[i].view.pitch;
    if (s.hw_handle != nullptr && channels[i] == 3) {
      // nvJPEG's convention: 0 means supported. A file the engine's parser or check refuses
      // takes the CUDA decoder, which reports its own problems.
      int unsupported = 1;
      const bool checked =
          api.stream_parse(s.hw_handle, file.data(), file.size(), 0, 0, s.hw_stream.get()) ==
              NVJPEG_STATUS_SUCCESS &&
          api.batched_supported(s.hw_handle, s.hw_stream.get(), &unsupported) == NVJPEG_STATUS_SUCCESS;
      if (checked && unsupported == 0) {
        hardware.push_back(i);
        continue;
      }
    }
    s.decode_one(file, channels[i], destinations[i], out[i], stream);
  }
  if (!hardware.empty()) {
    std::vector<const unsigned char*> data;
    std::vector<std::size_t> lengths;
    std::vector<nvjpegImage_t> batch_destinations;
    for (const std::size_t i : hardware) {
      data.push_back(files[i].data());
      lengths.push_back(files[i].size());
      batch_destinations.push_back(destinations[i]);
    }
    // Initialised again only when the batch size changes (and after a failed batch).
    nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
    if (s.hw_batch_size != hardware.size()) {
      s.hw_batch_size = 0;
      status = api.batched_initialize(s.hw_handle, s.hw_state.get(), static_cast<int>(hardware.size()), 1,
                                      NVJPEG_OUTPUT_BGRI);
      if (status == NVJPEG_STATUS_SUCCESS) s.hw_batch_size = hardware.size();
    }
    if (status == NVJPEG_STATUS_SUCCESS)
      status = api.decode_batched(s.hw_handle, s.hw_state.get(), data.data(), lengths.data(),
                                  batch_destinations.data(), stream);
    if (status == NVJPEG_STATUS_SUCCESS) {
      for (const std::size_t i : hardware) out[i].hardware = true;
    } else {
      s.hw_batch_size = 0;
      // The engine refused the batch as a whole: decode its files one by one, which says which
      // file is at fault (and still decodes the others).
      CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
      for (const std::size_t i : hardware) s.decode_one(files[i], channels[i], destinations[i], out[i], stream);
    }
  }
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  return out;
}

std::vector<std::uint8_t> GpuJpegCodec::encode(ConstDeviceImageView image, const JpegEncodeOptions& options,
                                               StreamHandle stream) {
  if (image.depth != CV_8U || (image.channels != 1 && image.channels != 3))
    throw Error(ErrorKind::usage, "the GPU JPEG encoder takes 8-bit images of 1 or 3 channels");
  if (options.quality < 1 || options.quality > 100)
    throw Error(ErrorKind::usage, "JPEG quality must be 1..100, not " + std::to_string(options.quality));
  State& s = *state_;
  const NvjpegApi& api = *s.api;
  const bool gray = image.channels == 1;
  CUCONV_NVJPEG_TRY(api.encoder_params_set_quality(s.params.get(), options.quality, stream));
  const nvjpegChromaSubsampling_t colour = options.chroma == Chroma::s444   ? NVJPEG_CSS_444
                                           : options.chroma == Chroma::s422 ? NVJPEG_CSS_422
                                                                            : NVJPEG_CSS_420;
  CUCONV_NVJPEG_TRY(api.encoder_params_set_sampling(s.params.get(), gray ? NVJPEG_CSS_GRAY : colour, stream));
  nvjpegImage_t source{};
  source.channel[0] = bytes_of(image.data);
  source.pitch[0] = image.pitch;
  if (gray) {
    CUCONV_NVJPEG_TRY(api.encode_yuv(s.handle, s.encoder.get(), s.params.get(), &source, NVJPEG_CSS_GRAY,
                                     image.width, image.height, stream));
  } else {
    CUCONV_NVJPEG_TRY(api.encode_image(s.handle, s.encoder.get(), s.params.get(), &source, NVJPEG_INPUT_BGRI,
                                       image.width, image.height, stream));
  }
  std::size_t length = 0;
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  CUCONV_NVJPEG_TRY(api.encode_retrieve_bitstream(s.handle, s.encoder.get(), nullptr, &length, stream));
  std::vector<std::uint8_t> encoded(length);
  CUCONV_NVJPEG_TRY(api.encode_retrieve_bitstream(s.handle, s.encoder.get(), encoded.data(), &length, stream));
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  encoded.resize(length);
  if (options.app_segments.empty()) return encoded;
  return insert_app_segments(encoded, options.app_segments);
}

}  // namespace cuconv::codec
