// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one per-image operation: read -> orient/strip -> decode -> filter -> encode -> atomic write,
// with the GPU codec route (decode on the device, filter there, encode from there: nvJPEG for
// JPEG) inside it and the route chosen once per image. Single-image mode runs process_image();
// batch mode and the server
// run the same stages (load_image, filter_image, encode_image, write_image) on the threads of the
// batch pipeline, so every feature of the per-image path is written once. No logging here: each
// stage fills the image's ImageReport (times, choices and notes) and the caller reports.
#include "engine/files.hpp"
#include "engine/gpu_codec_route.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <opencv2/core.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cuconv::engine {

class WarmGpuCodecs;  // warm_gpu.hpp
struct GpuJobResult;  // gpu_codec_pipeline.hpp

/// What every image of one command shares.
struct RunSettings {
  Filter filter;
  bool apply_filter = true;  ///< false: --no-filter (decode and encode only)
  ConvolveOptions convolve;
  ReadLimits read_limits;  ///< --max-pixels
  WriteOptions write;      ///< --quality, --compression; `overwrite` below and each image's metadata replace its own
  bool overwrite = false;  ///< replace existing outputs
  bool strip_metadata = false;  ///< --strip: outputs get no EXIF, ICC or XMP
  bool auto_orient = false;     ///< --auto-orient: pixels rotated upright by EXIF Orientation before filtering
  /// Set by the first image whose ICC profile its output format drops: that warning comes once a
  /// command (copies of these settings share it).
  std::shared_ptr<std::atomic<bool>> icc_drop_warned = std::make_shared<std::atomic<bool>>(false);
  engine::CodecRequest codec;  ///< which images take a GPU codec (gpu_codec_jobs: of the whole run)
  codec::GpuOutputOptions gpu_output;
  /// `auto` weighs the CPU against the GPU's start-up per image (cpu_or_gpu.hpp): for a process
  /// whose GPU is not warm yet (single-image mode without a server).
  bool cpu_when_faster = false;
  /// Why a GPU codec cannot be used (empty: it can); asked only for an image it could take.
  /// Unset: engine::gpu_codec_unusable_reason.
  std::function<std::string(const codec::GpuCodecFormat&)> gpu_codec_unusable;
  /// A server's running GPU codec pipelines: the GPU codec route (one image, or a batch's files)
  /// hands its files to them instead of setting up its own; nullptr: its own.
  WarmGpuCodecs* warm_codecs = nullptr;
  /// A workspace kept between images (a server's, per device), for the host route's filter;
  /// nullptr: the image makes its own.
  GpuWorkspace* workspace = nullptr;
};

/// One image: where it comes from and where its result goes.
struct ImageTask {
  std::string input;   ///< the path opened (a private copy for standard input)
  std::string output;  ///< the path written; its extension picks the format
  /// What messages call the input and the output (standard input, FORMAT:-); empty: the paths.
  std::string input_shown;
  std::string output_shown;
  /// The result goes back to the caller (ImageResult::encoded) instead of being written.
  bool keep_encoded = false;
};

enum class ImageStatus { pending, ok, failed, skipped };
[[nodiscard]] std::string_view to_string(ImageStatus status) noexcept;

/// Wall times of one image's stages, in milliseconds. A stage's time leaves out the libraries its
/// thread loaded meanwhile (common/library_loads.hpp): the process pays for those once, and -v
/// counts them apart.
struct ImageTimes {
  double read_ms = 0;    ///< read and decode
  double filter_ms = 0;  ///< ConvolveResult::times.kernel_ms: GPU kernels (CUDA events) or filter2D
  double upload_ms = 0;  ///< host to device copies (GPU variants)
  double download_ms = 0;
  double filter_stage_ms = 0;    ///< the whole filter stage: filter_ms, the copies, the device's set-up
  double write_ms = 0;           ///< encode, write, fsync, rename
  double encode_ms = 0;          ///< the encode's share of write_ms
  double codec_setup_ms = 0;     ///< GpuJobResult::setup_wait_ms: a single image's GPU codec set-up waited for
  double codec_shutdown_ms = 0;  ///< GpuJobResult::shutdown_ms
  double total_ms = 0;           ///< from the start of reading to the end of writing, queue waits included
};

/// A line the caller may print for this image, at its level.
struct ImageNote {
  enum class Level { info, warning } level = Level::info;
  std::string text;
};

struct ImageReport {
  std::string input;
  std::string output;
  ImageStatus status = ImageStatus::pending;
  std::string reason;                 ///< why it failed or was skipped; empty when ok
  ExitCode exit_code = ExitCode::ok;  ///< a failure's own exit code (what cuconv IN OUT would exit with)
  ImageTimes times;
  int device = -1;                      ///< the CUDA device it was given to (-1: current / CPU)
  std::string gpu_fallback;             ///< ConvolveResult::fallback_reason: `auto` filtered it with OpenCV
  std::optional<Variant> variant_used;  ///< unset when not filtered
  int strips = 1;                       ///< horizontal strips the GPU filtered it in
  std::string auto_reason;              ///< RunSettings::cpu_when_faster: which of CPU and GPU `auto` took, and why
  bool cpu_predicted_faster = false;    ///< ... and it took the CPU
  std::string decoder = "opencv";       ///< GpuDecoded::decoder ("nvjpeg-hardware" ...), "libjpeg" or "opencv"
  std::string encoder =
      "opencv";                  ///< GpuCodecFormat::name ("nvjpeg"), encoder_of's "libjpeg", "libtiff" ... or "opencv"
  std::string decoder_fallback;  ///< GPU codec images: why OpenCV decoded it
  int width = 0;
  int height = 0;
  int channels = 0;
  int input_depth = -1;          ///< CV_8U ...; -1 before decoding
  std::size_t input_bytes = 0;   ///< GPU codec images: the file's size
  std::vector<ImageNote> notes;  ///< in the order they arose
};

/// Copies what a GPU codec job says of one image into its report: the decoder and encoder (when
/// named), fallbacks, the variant, warnings (notes naming report.input), size and times (the
/// decode joins the read, the encode is the write's). The one copy for single images and batches.
void report_gpu_result(const GpuJobResult& result, ImageReport& report);

/// Which way an image goes: the host route (OpenCV's codecs, any filter variant) or a GPU
/// codec's (decode, filter and encode on the device).
struct Route {
  const codec::GpuCodecFormat* gpu_codec = nullptr;  ///< nullptr: the host route
  [[nodiscard]] bool on_gpu_codec() const noexcept { return gpu_codec != nullptr; }
};

/// An image between the stages: decoded pixels and metadata (host route) or the file's bytes
/// (GPU codec route, which decodes on the device).
struct LoadedImage {
  Route route;
  cv::Mat image;                          ///< the input, then the filtered result
  ImageMetadata metadata;                 ///< what the output keeps (none with --strip)
  std::vector<std::uint8_t> bytes;        ///< GPU codec route: the input file, then the encoded output
  std::unique_ptr<codec::FileWalk> walk;  ///< GPU codec route: what its reader found (points into `bytes`)
};

/// Which route `task` takes (the codec choice, once per image). Throws Error{usage} or Error{gpu}
/// for --codec gpu with an image or a machine it cannot serve.
[[nodiscard]] Route choose_route(const ImageTask& task, const RunSettings& settings);

/// Reads the input (through `files`) and makes it ready for filtering: checks the output's
/// extension first (no decoding for a name cuconv cannot write), decodes, reads the metadata the
/// output can keep, rotates upright (--auto-orient), strips (--strip) and checks that the output
/// format holds the result's depth and channels. GPU route: the file's bytes after the same
/// header checks. Throws Error naming the input or the output.
[[nodiscard]] LoadedImage load_image(const ImageTask& task, const RunSettings& settings, Route route, Files& files,
                                     ImageReport& report);

/// Filters a host-route image with convolve() (with `workspace` when given): `loaded.image` becomes
/// the result, which the returned ConvolveResult shares. Without a filter (--no-filter) nothing.
ConvolveResult filter_image(LoadedImage& loaded, const RunSettings& settings, GpuWorkspace* workspace,
                            ImageReport& report);

/// Encodes a filtered host-route image for `task.output` (format, quality, metadata); the GPU
/// route's bytes are already encoded and are returned as they are.
[[nodiscard]] std::vector<std::uint8_t> encode_image(LoadedImage& loaded, const ImageTask& task,
                                                     const RunSettings& settings, ImageReport& report);

/// Writes `encoded` as the output through `files` (atomic; no-replace unless --overwrite). Returns
/// false when the output exists and is kept (written meanwhile by another process).
[[nodiscard]] bool write_image(const ImageTask& task, std::span<const std::uint8_t> encoded,
                               const RunSettings& settings, Files& files, ImageReport& report);

/// Called between filtering and encoding with the input, the result and the image's report so far
/// (single-image mode's --compare and --bench); returning false leaves the output unwritten.
using InspectResult =
    std::function<bool(const cv::Mat& input, const ConvolveResult& result, const ImageReport& report)>;

/// What process_image returns besides the report.
struct ImageResult {
  ImageReport report;
  std::vector<std::uint8_t> encoded;  ///< with ImageTask::keep_encoded
  bool written = false;
};

/// The whole operation for one image on `route` (choose_route's answer): the stages in order, or
/// the GPU codec route. Throws Error for the image's failure (naming it).
[[nodiscard]] ImageResult process_image(const ImageTask& task, const RunSettings& settings, Route route, Files& files,
                                        const InspectResult& inspect = {});

/// `message` with every `path` replaced by `shown`: a local path (a copy of standard input, a
/// client's descriptor as /proc/self/fd/N, a format's stand-in name) becomes what the user gave.
[[nodiscard]] std::string renamed(std::string message, const std::string& path, const std::string& shown);

/// Runs `f`; an Error naming `path` is thrown again naming `shown` instead.
template <class F>
auto naming(const std::string& path, const std::string& shown, F f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.kind(), renamed(e.what(), path, shown));
  }
}

/// Whether a CUDA device can be used (once per process); `reason` says why not.
[[nodiscard]] bool gpu_usable(std::string* reason);

}  // namespace cuconv::engine
