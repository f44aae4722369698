// SPDX-License-Identifier: Apache-2.0
// nvJPEG decode and encode for GpuJpegCodec (jpeg_codec.hpp). Baseline colour files go to the
// GPU's JPEG engine in one batched call when the GPU has one (nvJPEG's hardware backend); the
// others (progressive, gray, subsamplings the engine lacks) and every file on GPUs without an
// engine go through nvjpegDecode on the default backend, one at a time. Decoded pixels are
// written straight into pitched DeviceImages, interleaved BGR like OpenCV's. One nvJPEG library
// handle per device serves the engine, the encoder and header parsing; the default-backend
// handle is made only when a file needs the CUDA decoder (each handle costs a large part of a
// second to make).
#include "codec/nvjpeg_codec.hpp"

#include "codec/jpeg_markers.hpp"
#include "codec/nvjpeg_api.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/memory/device_memory.hpp"

#include <cuconv/error.hpp>

#include <opencv2/core/hal/interface.h>

#include <chrono>
#include <map>
#include <mutex>
#include <utility>

namespace cuconv::codec {

using codec::check_nvjpeg;
using codec::NvjpegApi;

bool nvjpeg_available(std::string* reason) { return codec::nvjpeg_api(reason) != nullptr; }

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
    case NVJPEG_STATUS_SUCCESS:
      return Outcome::decoded;
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return Outcome::not_supported;
    case NVJPEG_STATUS_BAD_JPEG:
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return Outcome::bad_file;
    default:
      check_nvjpeg(status, call);
  }
  return Outcome::decoded;  // not reached: check_nvjpeg threw
}

unsigned char* bytes_of(const std::byte* data) {
  return reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data));
}

}  // namespace

/// The nvJPEG library handles of one device. `primary` is the hardware backend's where the GPU
/// has a JPEG engine (A100, H100 ...), else the default backend's; `cuda` is the default
/// backend's, for nvjpegDecode (the same handle as `primary` without an engine). Each device has
/// its own lock, so the devices of a process make their handles at the same time.
struct DeviceHandles {
  std::mutex mutex;  ///< guards making the handles
  bool made = false;
  nvjpegHandle_t primary = nullptr;
  bool hardware = false;
  nvjpegHandle_t cuda = nullptr;
};

/// The handles of `device`, the primary one made on first use. They live until the process ends
/// and are never destroyed: at exit the CUDA context they belong to may already be gone. nvJPEG
/// handles are thread-safe; the states made from them are per codec.
DeviceHandles& device_handles(const NvjpegApi& api, int device) {
  static auto* const handles = new std::map<int, std::unique_ptr<DeviceHandles>>;
  static std::mutex map_mutex;
  DeviceHandles* mine = nullptr;
  {
    const std::lock_guard lock(map_mutex);
    std::unique_ptr<DeviceHandles>& slot = (*handles)[device];
    if (!slot) slot = std::make_unique<DeviceHandles>();
    mine = slot.get();
  }
  const std::lock_guard lock(mine->mutex);
  if (mine->made) return *mine;
  // The hardware backend exists only on GPUs with a JPEG engine; elsewhere its creation fails.
  nvjpegHandle_t made = nullptr;
  if (api.create_ex(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &made) == NVJPEG_STATUS_SUCCESS) {
    mine->hardware = true;
  } else {
    made = nullptr;
    CUCONV_NVJPEG_TRY(api.create_ex(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &made));
    mine->cuda = made;
  }
  mine->primary = made;
  mine->made = true;
  return *mine;
}

/// The default-backend handle of `device` (made on first use).
nvjpegHandle_t cuda_handle(const NvjpegApi& api, DeviceHandles& handles) {
  const std::lock_guard lock(handles.mutex);
  if (handles.cuda == nullptr)
    CUCONV_NVJPEG_TRY(api.create_ex(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &handles.cuda));
  return handles.cuda;
}

template <class Handle, class Create>
NvjpegOwned<Handle> make_owned(Create&& create, nvjpegStatus_t (*destroy)(Handle), const char* call) {
  Handle made = nullptr;
  check_nvjpeg(create(&made), call);
  return {made, destroy};
}

struct GpuJpegCodec::State {
  const NvjpegApi* api = nullptr;
  DeviceHandles* handles = nullptr;
  // Made on first use (see the class comment).
  NvjpegOwned<nvjpegJpegState_t> cuda_state;  ///< nvjpegDecode's, on the default backend
  NvjpegOwned<nvjpegJpegState_t> hw_state;    ///< the JPEG engine's batched decode
  NvjpegOwned<nvjpegJpegStream_t> parser;     ///< plan(): the engine's support check
  NvjpegOwned<nvjpegEncoderParams_t> params;
  NvjpegOwned<nvjpegEncoderState_t> encoder;
  gpu::PinnedBuffer bitstream;    ///< the encoder's output, copied out at the link's speed
  std::size_t hw_batch_size = 0;  ///< the batch size hw_state is initialised for; 0: none

  [[nodiscard]] nvjpegHandle_t handle() const noexcept { return handles->primary; }

  void ensure_hw_state() {
    if (!hw_state)
      hw_state = make_owned<nvjpegJpegState_t>([&](auto* out) { return api->state_create(handle(), out); },
                                               api->state_destroy, "nvjpegJpegStateCreate");
  }
  nvjpegHandle_t ensure_cuda_state() {
    const nvjpegHandle_t cuda = cuda_handle(*api, *handles);
    if (!cuda_state)
      cuda_state = make_owned<nvjpegJpegState_t>([&](auto* out) { return api->state_create(cuda, out); },
                                                 api->state_destroy, "nvjpegJpegStateCreate");
    return cuda;
  }
  void ensure_encoder() {
    if (encoder) return;
    params =
        make_owned<nvjpegEncoderParams_t>([&](auto* out) { return api->encoder_params_create(handle(), out, nullptr); },
                                          api->encoder_params_destroy, "nvjpegEncoderParamsCreate");
    encoder =
        make_owned<nvjpegEncoderState_t>([&](auto* out) { return api->encoder_state_create(handle(), out, nullptr); },
                                         api->encoder_state_destroy, "nvjpegEncoderStateCreate");
  }

  /// nvjpegDecode of one file into `image`; records the outcome in `result`.
  void decode_one(std::span<const std::uint8_t> file, int channels, nvjpegImage_t& image, DecodedJpeg& result,
                  StreamHandle stream) {
    const nvjpegHandle_t cuda = ensure_cuda_state();
    const nvjpegStatus_t status = api->decode(cuda, cuda_state.get(), file.data(), file.size(),
                                              channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_BGRI, &image, stream);
    const Outcome outcome = classify(status, "nvjpegDecode");
    // The state's staging buffers serve the next file: let this one's device work finish first.
    CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    if (outcome == Outcome::decoded) return;
    const std::string why = std::string("nvJPEG: ") + codec::nvjpeg_status_name(status);
    if (outcome == Outcome::not_supported)
      result.not_supported = why;
    else
      result.bad_file = "cannot decode JPEG: truncated or corrupt (" + why + ")";
    result.view = {};  // the caller takes `result.image` back
  }
};

GpuJpegCodec::GpuJpegCodec(int device) : state_(std::make_unique<State>()) {
  State& s = *state_;
  std::string reason;
  s.api = codec::nvjpeg_api(&reason);
  if (s.api == nullptr) throw Error(ErrorKind::gpu, reason);
  if (device >= 0) CUCONV_CUDA_TRY(cudaSetDevice(device));
  int current = 0;
  CUCONV_CUDA_TRY(cudaGetDevice(&current));
  s.handles = &device_handles(*s.api, current);
}

GpuJpegCodec::~GpuJpegCodec() = default;
GpuJpegCodec::GpuJpegCodec(GpuJpegCodec&&) noexcept = default;
GpuJpegCodec& GpuJpegCodec::operator=(GpuJpegCodec&&) noexcept = default;

std::string_view GpuJpegCodec::backend() const noexcept { return state_->handles->hardware ? "hardware" : "cuda"; }

void GpuJpegCodec::prepare_decoder() {
  if (state_->handles->hardware)
    state_->ensure_hw_state();
  else
    static_cast<void>(state_->ensure_cuda_state());
}

JpegPlan GpuJpegCodec::plan(std::span<const std::uint8_t> file) { return plan(file, read_jpeg_markers(file)); }

JpegPlan GpuJpegCodec::plan(std::span<const std::uint8_t> file, JpegMarkers markers) {
  State& s = *state_;
  const NvjpegApi& api = *s.api;
  JpegPlan p;
  p.markers = std::move(markers);
  if (file.size() < 2 || file[0] != 0xFF || file[1] != 0xD8) {  // another format named .jpg
    p.not_supported = "not a JPEG stream";
    return p;
  }
  if (!p.markers.valid) {
    p.bad_file = "cannot decode JPEG: truncated or corrupt (" + p.markers.defect + ")";
    return p;
  }
  if (std::string why = gpu_decode_obstacle(p.markers); !why.empty()) {
    p.not_supported = std::move(why);
    return p;
  }
  int components = 0;
  nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
  int widths[NVJPEG_MAX_COMPONENT] = {};
  int heights[NVJPEG_MAX_COMPONENT] = {};
  const nvjpegStatus_t info =
      api.get_image_info(s.handle(), file.data(), file.size(), &components, &subsampling, widths, heights);
  if (info != NVJPEG_STATUS_SUCCESS) {
    p.bad_file =
        std::string("cannot decode JPEG: nvJPEG cannot read its header (") + codec::nvjpeg_status_name(info) + ")";
    return p;
  }
  if (components == 3 && subsampling == NVJPEG_CSS_UNKNOWN) {
    p.not_supported = "unusual chroma subsampling";
    return p;
  }
  p.width = widths[0];
  p.height = heights[0];
  p.channels = components == 1 ? 1 : 3;
  if (s.handles->hardware && p.channels == 3) {
    if (!s.parser)
      s.parser = make_owned<nvjpegJpegStream_t>([&](auto* out) { return api.stream_create(s.handle(), out); },
                                                api.stream_destroy, "nvjpegJpegStreamCreate");
    // nvJPEG's convention: 0 means supported. A file the engine's parser or check refuses takes
    // the CUDA decoder, which reports its own problems.
    int unsupported = 1;
    p.hardware =
        api.stream_parse(s.handle(), file.data(), file.size(), 0, 0, s.parser.get()) == NVJPEG_STATUS_SUCCESS &&
        api.batched_supported(s.handle(), s.parser.get(), &unsupported) == NVJPEG_STATUS_SUCCESS && unsupported == 0;
  }
  return p;
}

std::vector<DecodedJpeg> GpuJpegCodec::decode(const std::vector<std::span<const std::uint8_t>>& files,
                                              StreamHandle stream, DeviceImagePool* pool, std::vector<JpegPlan> plans,
                                              double* engine_call_ms) {
  State& s = *state_;
  const NvjpegApi& api = *s.api;
  if (plans.empty())
    for (const auto& file : files) plans.push_back(plan(file));
  if (plans.size() != files.size()) throw Error(ErrorKind::internal, "GpuJpegCodec::decode: one plan per file");
  std::vector<DecodedJpeg> out(files.size());
  std::vector<nvjpegImage_t> destinations(files.size(), nvjpegImage_t{});
  std::vector<std::size_t> hardware, cuda;  // files for the JPEG engine's batch, and for nvjpegDecode
  for (std::size_t i = 0; i < files.size(); ++i) {
    const JpegPlan& p = plans[i];
    if (!p.decodable()) {
      out[i].not_supported = p.not_supported;
      out[i].bad_file = p.bad_file;
      continue;
    }
    out[i].image =
        pool != nullptr ? pool->take(p.width, p.height, p.channels) : DeviceImage(p.width, p.height, p.channels, CV_8U);
    out[i].view = fit(out[i].image, p.width, p.height);
    destinations[i].channel[0] = bytes_of(out[i].view.data);
    destinations[i].pitch[0] = out[i].view.pitch;
    (p.hardware ? hardware : cuda).push_back(i);
  }
  // A pooled (or reallocated) image holds an earlier decode's pixels: in a server, another
  // request's. The JPEG engine writes every pixel of a file it accepted (batched_supported) and is
  // not cleared for: it has been reported to write when called rather than in stream order, so a
  // clear queued on the stream could land after it. The CUDA decoder's targets are cleared on the
  // stream first, so whatever part of one it leaves unwritten reads 0.
  if (!hardware.empty()) {
    s.ensure_hw_state();
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
      status = api.batched_initialize(s.handle(), s.hw_state.get(), static_cast<int>(hardware.size()), 1,
                                      NVJPEG_OUTPUT_BGRI);
      if (status == NVJPEG_STATUS_SUCCESS) s.hw_batch_size = hardware.size();
    }
    const auto call = std::chrono::steady_clock::now();
    if (status == NVJPEG_STATUS_SUCCESS)
      status = api.decode_batched(s.handle(), s.hw_state.get(), data.data(), lengths.data(), batch_destinations.data(),
                                  stream);
    if (engine_call_ms != nullptr)
      *engine_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - call).count();
    if (status == NVJPEG_STATUS_SUCCESS) {
      for (const std::size_t i : hardware) out[i].hardware = true;
    } else {
      s.hw_batch_size = 0;
      // The engine refused the batch as a whole: decode its files one by one, which says which
      // file is at fault (and still decodes the others).
      CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
      cuda.insert(cuda.end(), hardware.begin(), hardware.end());
    }
  }
  for (const std::size_t i : cuda) {
    CUCONV_CUDA_TRY(cudaMemset2DAsync(out[i].view.data, out[i].view.pitch, 0, out[i].view.row_bytes(),
                                      static_cast<std::size_t>(plans[i].height), stream));
    s.decode_one(files[i], plans[i].channels, destinations[i], out[i], stream);
    if (out[i].view.data != nullptr) continue;
    if (pool != nullptr) pool->give(std::move(out[i].image));
    out[i].image = DeviceImage();
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
  s.ensure_encoder();
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
    CUCONV_NVJPEG_TRY(api.encode_yuv(s.handle(), s.encoder.get(), s.params.get(), &source, NVJPEG_CSS_GRAY, image.width,
                                     image.height, stream));
  } else {
    CUCONV_NVJPEG_TRY(api.encode_image(s.handle(), s.encoder.get(), s.params.get(), &source, NVJPEG_INPUT_BGRI,
                                       image.width, image.height, stream));
  }
  std::size_t length = 0;
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  CUCONV_NVJPEG_TRY(api.encode_retrieve_bitstream(s.handle(), s.encoder.get(), nullptr, &length, stream));
  if (s.bitstream.size() < length) {
    constexpr std::size_t kStep = std::size_t{1} << 20;  // grown in whole MiB: few reallocations
    s.bitstream = gpu::PinnedBuffer((length + kStep - 1) / kStep * kStep);
  }
  CUCONV_NVJPEG_TRY(api.encode_retrieve_bitstream(s.handle(), s.encoder.get(), s.bitstream.data(), &length, stream));
  CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
  const std::span<const std::uint8_t> encoded(s.bitstream.data(), length);
  if (options.app_segments.empty()) return {encoded.begin(), encoded.end()};
  return insert_app_segments(encoded, options.app_segments);
}

}  // namespace cuconv::codec
