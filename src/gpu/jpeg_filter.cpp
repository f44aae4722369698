// The GPU JPEG path (jpeg_filter.hpp): per batch, one nvJPEG decode call, then per file the
// filter queued on the job's stream straight from the decoded device image and the nvJPEG
// encode from the filtered one; files nvJPEG refuses take OpenCV's decoder, filter and encoder.
#include "gpu/jpeg_filter.hpp"

#include "codec/jpeg_markers.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/jpeg_codec.hpp"

#include <cuconv/image_io.hpp>

#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace cuconv::codec {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

/// APP segments worth copying into an output of `channels` colour channels decoded from a file
/// with these markers: an ICC profile of a CMYK file does not describe the BGR result.
std::vector<std::span<const std::uint8_t>> segments_to_copy(const JpegMarkers& markers) {
  std::vector<std::span<const std::uint8_t>> kept;
  for (const auto& segment : markers.copied_segments) {
    const bool icc = segment.size() >= 16 && segment[1] == 0xE2 &&
                     std::equal(segment.begin() + 4, segment.begin() + 15, "ICC_PROFILE");
    if (icc && markers.components == 4) continue;
    kept.push_back(segment);
  }
  return kept;
}

}  // namespace

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

bool choose_gpu_codec(const CodecRequest& request, const std::string& input, const std::string& output,
                      const std::function<std::string()>& gpu_unusable_reason) {
  // `auto` keeps OpenCV's codec until the GPU path is the faster one end to end: today its
  // nvJPEG set-up and per-image encode make it slower (docs/gpu-jpeg.md, "Measured").
  if (request.codec != Codec::gpu || !is_jpeg_path(input) || !is_jpeg_path(output)) return false;
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

struct JpegFilterJob::State {
  explicit State(int device) : codec(device) {
    workspace.prepare(device);
  }
  GpuJpegCodec codec;  // first: makes `device` current for the stream below
  GpuWorkspace workspace;
  detail::CudaStream stream;
  int device = -1;
  std::vector<DeviceImage> spare;  ///< decoded and filtered images of the last batch, reused

  /// OpenCV's decode, filter and encode for a file nvJPEG refused.
  void run_on_opencv(std::span<const std::uint8_t> file, const Filter* filter, const ConvolveOptions& options,
                     const JpegOutputOptions& output, const JpegMarkers& markers, JpegJobResult& result) {
    const auto t = Clock::now();
    const cv::Mat bytes(1, static_cast<int>(file.size()), CV_8U, const_cast<std::uint8_t*>(file.data()));
    cv::Mat image = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
    if (image.empty()) throw Error(ErrorKind::bad_input, "cannot decode image (corrupt, truncated or not an image format OpenCV reads)");
    result.decode_ms = ms_since(t);
    result.decoder = "opencv";
    result.width = image.cols;
    result.height = image.rows;
    result.channels = image.channels();
    if (filter != nullptr) {
      const auto f = Clock::now();
      ConvolveResult filtered = convolve(image, *filter, options, workspace);
      image = std::move(filtered.image);
      result.variant_used = filtered.variant_used;
      result.gpu_fallback = std::move(filtered.fallback_reason);
      result.filter_ms = ms_since(f);
    }
    const auto e = Clock::now();
    std::vector<std::uint8_t> encoded;
    if (!cv::imencode(".jpg", image, encoded, {cv::IMWRITE_JPEG_QUALITY, output.quality}))
      throw Error(ErrorKind::output, "cannot encode image as JPEG");
    result.encoder = "opencv";
    result.encoded = output.keep_metadata ? insert_app_segments(encoded, segments_to_copy(markers)) : std::move(encoded);
    result.encode_ms = ms_since(e);
  }
};

JpegFilterJob::JpegFilterJob(int device) : state_(std::make_unique<State>(device)) { state_->device = device; }
JpegFilterJob::~JpegFilterJob() = default;
JpegFilterJob::JpegFilterJob(JpegFilterJob&&) noexcept = default;
JpegFilterJob& JpegFilterJob::operator=(JpegFilterJob&&) noexcept = default;

std::vector<JpegJobResult> JpegFilterJob::run(const std::vector<std::span<const std::uint8_t>>& files,
                                              const Filter* filter, const ConvolveOptions& options,
                                              const JpegOutputOptions& output) {
  State& s = *state_;
  if (s.device >= 0) CUCONV_CUDA_TRY(cudaSetDevice(s.device));
  std::vector<JpegJobResult> results(files.size());
  const auto t = Clock::now();
  std::vector<DecodedJpeg> decoded = s.codec.decode(files, s.stream.get(), &s.spare);
  const double decode_share = ms_since(t) / static_cast<double>(std::max<std::size_t>(files.size(), 1));
  for (std::size_t i = 0; i < files.size(); ++i) {
    JpegJobResult& result = results[i];
    DecodedJpeg& in = decoded[i];
    try {
      const JpegMarkers markers = read_jpeg_markers(files[i]);
      if (!in.bad_file.empty()) throw Error(ErrorKind::bad_input, in.bad_file);
      if (!in.not_supported.empty()) {
        result.decoder_fallback = "nvJPEG cannot decode it: " + in.not_supported;
        s.run_on_opencv(files[i], filter, options, output, markers, result);
        continue;
      }
      result.decoder = in.hardware ? "nvjpeg-hardware" : "nvjpeg-cuda";
      result.decode_ms = decode_share;
      const DeviceImageView source = in.view;
      result.width = source.width;
      result.height = source.height;
      result.channels = source.channels;
      DeviceImage filtered;
      DeviceImageView filtered_view;
      if (filter != nullptr) {
        const auto f = Clock::now();
        filtered = reuse_or_allocate(&s.spare, source.width, source.height, source.channels);
        filtered_view = fit(filtered, source.width, source.height);
        result.variant_used = convolve(source, filtered_view, *filter, options, s.workspace, s.stream.get());
        result.filter_ms = ms_since(f);
      }
      const auto e = Clock::now();
      JpegEncodeOptions encode_options;
      encode_options.quality = output.quality;
      if (output.keep_metadata) encode_options.app_segments = segments_to_copy(markers);
      result.encoded = s.codec.encode(filter != nullptr ? filtered_view : source, encode_options, s.stream.get());
      result.encoder = "nvjpeg";
      result.encode_ms = ms_since(e);
      if (!filtered.empty()) s.spare.push_back(std::move(filtered));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::gpu) throw;  // the device as a whole: the caller stops using it
      result.encoded.clear();
      result.error = e;
    } catch (const cv::Exception& e) {
      result.encoded.clear();
      result.error = Error(ErrorKind::bad_input, std::string("OpenCV: ") + e.what());
    }
  }
  for (DecodedJpeg& d : decoded)
    if (!d.image.empty()) s.spare.push_back(std::move(d.image));  // the stream is idle: encode waited
  // Keep about one batch's worth (the oldest go first): a batch of other sizes frees the rest.
  const std::size_t keep = files.size() + 1;
  if (s.spare.size() > keep) s.spare.erase(s.spare.begin(), s.spare.end() - static_cast<std::ptrdiff_t>(keep));
  return results;
}

}  // namespace cuconv::codec
