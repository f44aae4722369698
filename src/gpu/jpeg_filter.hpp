#pragma once
// JPEG files in, filtered JPEG files out, on one GPU: decode (nvJPEG, batched), filter on the
// device (convolve()'s device overload), encode (nvJPEG) and copy the input's APP segments. A
// file nvJPEG cannot decode (CMYK, 12-bit, arithmetic ...) is decoded, filtered and encoded with
// OpenCV instead and says why. The one place that decides whether a job takes this path is
// choose_gpu_codec(). No CUDA headers (pimpl): the batch engine and the CLI include it.
#include "codec/codec_names.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::codec {

/// What decides the codec for a job besides the file names.
struct CodecRequest {
  Codec codec = Codec::automatic;
  Variant variant = Variant::automatic;  ///< --variant opencv filters on the CPU
  Depth depth = Depth::same;
  bool host_features = false;  ///< --compare or --bench: they work on host images
  /// --auto-orient: the GPU path does not rotate pixels, so it is not chosen then.
  bool auto_orient = false;
};

/// Whether `input` -> `output` goes through the GPU JPEG path. `gpu_unusable_reason` is asked
/// only for a JPEG -> JPEG job: empty when a CUDA device and nvJPEG can be used, else why not
/// (gpu_codec_unusable_reason in production, a fixed answer in tests). Throws
/// Error{gpu} (exit 5) for Codec::gpu when the GPU codec cannot be used, and Error{usage} for
/// Codec::gpu with a job it cannot do (not JPEG -> JPEG, --variant opencv ...).
[[nodiscard]] bool choose_gpu_codec(const CodecRequest& request, const std::string& input, const std::string& output,
                                    const std::function<std::string()>& gpu_unusable_reason);

/// Empty when a CUDA device and nvJPEG can be used, else why not.
[[nodiscard]] std::string gpu_codec_unusable_reason();

/// Whether `path` ends in .jpg, .jpeg, .jpe or .jfif (any letter case).
[[nodiscard]] bool is_jpeg_path(std::string_view path);

/// Output settings of the JPEG path.
struct JpegOutputOptions {
  int quality = 95;          ///< 1..100, both codecs
  bool keep_metadata = true; ///< copy the input's APP segments (EXIF, ICC, XMP ...); --strip turns it off
};

/// What happened to one file.
struct JpegJobResult {
  std::vector<std::uint8_t> encoded;   ///< the output file's bytes; empty on failure
  std::optional<Error> error;          ///< the file's failure (bad_input: not a decodable JPEG; gpu ...)
  std::string decoder;                 ///< "nvjpeg-hardware", "nvjpeg-cuda" or "opencv"
  std::string encoder;                 ///< "nvjpeg" or "opencv"
  std::string decoder_fallback;        ///< why OpenCV decoded it; empty when nvJPEG did
  std::optional<Variant> variant_used; ///< unset without a filter (--no-filter)
  std::string gpu_fallback;            ///< ConvolveResult::fallback_reason on the OpenCV decode path
  int width = 0;
  int height = 0;
  int channels = 0;
  double decode_ms = 0;  ///< this file's share of the batch's decode (wall)
  double filter_ms = 0;  ///< wall, queueing and running the filter
  double encode_ms = 0;  ///< wall, encoding and copying the bytes out
};

/// A GPU codec, a GpuWorkspace and a stream for one thread on one device (not thread-safe).
class JpegFilterJob {
 public:
  /// Throws Error{gpu} when the device or nvJPEG cannot be used.
  explicit JpegFilterJob(int device = -1);
  ~JpegFilterJob();
  JpegFilterJob(JpegFilterJob&&) noexcept;
  JpegFilterJob& operator=(JpegFilterJob&&) noexcept;
  JpegFilterJob(const JpegFilterJob&) = delete;
  JpegFilterJob& operator=(const JpegFilterJob&) = delete;

  /// Decodes `files` as one batch, filters each with `filter` (nullptr: no filter, --no-filter)
  /// and encodes it. Per-file failures come back in the results; only a failure of the GPU as a
  /// whole throws.
  [[nodiscard]] std::vector<JpegJobResult> run(const std::vector<std::span<const std::uint8_t>>& files,
                                               const Filter* filter, const ConvolveOptions& options,
                                               const JpegOutputOptions& output);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// The whole file at `path` (Error{bad_input} naming it when it cannot be read), after the checks
/// read_image makes before decoding: a truncated or corrupt structure, more pixels than
/// `max_pixels`.
[[nodiscard]] std::vector<std::uint8_t> read_jpeg_file(const std::string& path, std::uint64_t max_pixels);

}  // namespace cuconv::codec
