// SPDX-License-Identifier: Apache-2.0
#pragma once
// The seam between the engine and a codec that decodes into and encodes from device memory
// (nvJPEG's today). The engine's GPU route, its pipeline and the server find a GPU codec by the
// files' names (gpu_codec_for) and use it only through GpuCodec, so a new GPU codec is its own
// source file and its row in gpu_codecs.cpp (docs/extending.md, "A GPU codec"). No CUDA headers.
#include <cuconv/device_image.hpp>

#include <opencv2/core.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::codec {

/// What a codec's reader found while it walked a file (markers, segments): the engine carries it
/// to the codec's plan() and never looks inside. It may point into the file's bytes.
struct FileWalk {
  virtual ~FileWalk() = default;
};

/// A file as a GPU codec's reader leaves it: its bytes, refused as read_image refuses a file,
/// and what the same walk found. Moved, never copied (`walk` may point into `bytes`).
struct GpuCodecFile {
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<FileWalk> walk;
};

/// How one file will be decoded, found from its headers before any device work.
struct GpuPlan {
  int width = 0;
  int height = 0;
  int channels = 0;                         ///< of the decoded image: 3 (BGR, OpenCV's order) or 1 (gray), CV_8U
  std::string not_supported;                ///< why the codec cannot decode it: OpenCV decodes it instead
  std::string bad_file;                     ///< what is wrong with the bytes
  std::shared_ptr<const void> codec_state;  ///< the codec's own (its walk, its decoder's choice)
  [[nodiscard]] bool decodable() const noexcept { return not_supported.empty() && bad_file.empty(); }
};

/// One decoded file. Exactly one of: `image` filled; `not_supported` (decode it with OpenCV
/// instead); `bad_file` (the bytes cannot be decoded: the file's error).
struct GpuDecoded {
  DeviceImage image;     ///< the allocation holding `view` (may be larger: reused between batches)
  DeviceImageView view;  ///< the pixels, CV_8U, 3 channels BGR or 1 gray
  std::string not_supported;
  std::string bad_file;
  std::string decoder;  ///< what decoded it, for the report ("nvjpeg-hardware" ...)
};

/// What an output of a GPU codec's format keeps.
struct GpuOutputOptions {
  int quality = 95;           ///< 1..100, as OpenCV's quality settings
  bool keep_metadata = true;  ///< copy the input's metadata; --strip turns it off
};

/// Device images of one device, given back after use and handed out again (thread-safe), so a
/// stream of similar images allocates only at its start: cudaMalloc and cudaFree would wait for
/// the whole device. Sizes are rounded up to whole tiles of 256 x 256 pixels, so images of
/// nearby sizes share them. Nothing is freed before the pool goes.
class DeviceImagePool {
 public:
  /// A CV_8U image of `channels` channels at least `width` x `height` (on the current device).
  [[nodiscard]] DeviceImage take(int width, int height, int channels);
  void give(DeviceImage image);

 private:
  std::mutex mutex_;
  std::vector<DeviceImage> free_;
};

/// The top-left `width` x `height` pixels of `image`.
[[nodiscard]] DeviceImageView fit(const DeviceImage& image, int width, int height) noexcept;

/// One device's decoder and encoder of a format, for one thread (not thread-safe). Per-file
/// problems come back in the results; the device or the library failing throws Error{gpu}.
class GpuCodec {
 public:
  virtual ~GpuCodec() = default;
  /// Makes the decoder's states now rather than at the first decode: for a thread that waits for
  /// its first files anyway.
  virtual void prepare_decoder() = 0;
  /// Reads `file`'s headers (host only): its size and how it will be decoded; `walk`: what its
  /// reader found (GpuCodecFormat::read), else nullptr and the file is walked here.
  [[nodiscard]] virtual GpuPlan plan(std::span<const std::uint8_t> file, std::unique_ptr<FileWalk> walk) = 0;
  /// Decodes every file with its plan on `stream` and waits for it; images come from `pool`.
  /// `engine_call_ms`, when given, gets the host time spent inside the library's batched call.
  [[nodiscard]] virtual std::vector<GpuDecoded> decode(const std::vector<std::span<const std::uint8_t>>& files,
                                                       std::vector<GpuPlan> plans, StreamHandle stream,
                                                       DeviceImagePool& pool, double* engine_call_ms) = 0;
  /// Encodes `image` (CV_8U, 3 channels BGR or 1 gray) after the work queued on `stream`, with
  /// the metadata of `source` (the input's plan; an empty plan: none) that `options` keeps, and
  /// waits for it. Metadata it cannot keep is named in `warnings`, one line each.
  [[nodiscard]] virtual std::vector<std::uint8_t> encode(ConstDeviceImageView image, const GpuOutputOptions& options,
                                                         const GpuPlan& source, StreamHandle stream,
                                                         std::vector<std::string>& warnings) = 0;
  /// The same from host pixels, on the CPU: the files this codec cannot decode (OpenCV decoded
  /// them) still come out in the format, with their metadata.
  [[nodiscard]] virtual std::vector<std::uint8_t> encode_host(const cv::Mat& image, const GpuOutputOptions& options,
                                                              const GpuPlan& source,
                                                              std::vector<std::string>& warnings) = 0;
};

/// A GPU codec as the engine finds it: one row per codec in gpu_codecs.cpp.
struct GpuCodecFormat {
  std::string_view name;    ///< the codec, in reports and as its encoder's name: "nvjpeg"
  std::string_view format;  ///< the format, in messages: "JPEG"
  /// Whether `path` names a file of the format (by its extension).
  bool (*takes)(std::string_view path);
  /// Empty when the codec's library can be used, else why not (the device is checked apart).
  std::string (*unusable_reason)();
  /// `path`'s bytes, refused as read_image refuses them (Error{bad_input}), and their walk.
  GpuCodecFile (*read)(const std::string& path, std::uint64_t max_pixels);
  /// A small file of the format, decoded once at set-up so the first batch does not pay for the
  /// decoder's first use.
  std::vector<std::uint8_t> (*warm_up_file)();
  /// A decoder and encoder on `device`; throws Error{gpu} when it cannot be made.
  std::unique_ptr<GpuCodec> (*make)(int device);
};

/// Every GPU codec this build has.
[[nodiscard]] std::span<const GpuCodecFormat> gpu_codecs() noexcept;

/// The GPU codec that reads `input` and writes `output` (same format both ways); nullptr: none.
[[nodiscard]] const GpuCodecFormat* gpu_codec_for(std::string_view input, std::string_view output) noexcept;

}  // namespace cuconv::codec
