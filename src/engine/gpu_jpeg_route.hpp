// SPDX-License-Identifier: Apache-2.0
#pragma once
// JPEG files in, filtered JPEG files out, on one GPU: decode (nvJPEG, batched), filter on the
// device (convolve()'s device overload), encode (nvJPEG) and copy the input's APP segments. A
// file nvJPEG cannot decode (CMYK, 12-bit, arithmetic ...) is decoded, filtered and encoded with
// OpenCV instead and says why. The one place that decides whether a job takes this path is
// choose_gpu_codec() (jpeg_filter.cpp); the pipeline (JpegPipeline, JpegFilterJob) is in
// jpeg_pipeline.cpp. No CUDA headers (pimpl): the batch engine and the CLI include it.
#include "codec/jpeg_markers.hpp"
#include "common/codec_names.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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
  /// JPEG -> JPEG jobs in the run (1 in single-image mode) and the CPU threads OpenCV's codec
  /// would have (--jobs; 0: the machine's): what Codec::automatic weighs.
  std::size_t jpeg_jobs = 1;
  std::size_t cpu_threads = 0;
  /// The GPU codec is set up already (a server's WarmJpeg): Codec::automatic takes it for any
  /// JPEG -> JPEG job, since no set-up is left to weigh.
  bool gpu_codec_warm = false;
};

/// The fewest JPEG -> JPEG jobs for which `--codec auto` takes the GPU codec: 16 per CPU thread of
/// OpenCV's codec, at least 64. Below it the GPU codec's set-up (CUDA context, nvJPEG handle and
/// states: most of a second) costs more than its speed saves (docs/gpu-jpeg.md, "Which path").
[[nodiscard]] std::size_t auto_gpu_codec_threshold(std::size_t cpu_threads);

/// Whether `input` -> `output` goes through the GPU JPEG path: under Codec::gpu, or under
/// Codec::automatic for a run of at least auto_gpu_codec_threshold() JPEG -> JPEG jobs (any, when
/// the codec is warm) when the GPU codec can be used. `gpu_unusable_reason` is asked
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

/// One file's job: its filter (nullptr: none, --no-filter), convolve options and output options.
struct JpegJobSettings {
  const Filter* filter = nullptr;
  ConvolveOptions options;
  JpegOutputOptions output;
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
  std::vector<std::string> warnings;   ///< input blocks not copied into the output and why ("ICC profile dropped: ..."), one line each
  int width = 0;
  int height = 0;
  int channels = 0;
  double decode_ms = 0;  ///< this file's share of the batch's decode (wall)
  double filter_ms = 0;  ///< wall, queueing and running the filter
  double encode_ms = 0;  ///< wall, encoding and copying the bytes out
};

/// Sizes of one device's GPU JPEG pipeline.
struct JpegPipelineOptions {
  /// Most files per decode call: the JPEG engine is fastest with large batches.
  std::size_t batch = 128;
  /// Most decoded bytes per decode call (large images make smaller batches); decoded images
  /// waiting for an encoder hold at most twice this (the decoder waits for room).
  std::size_t batch_bytes = std::size_t{1536} << 20;
  /// Filter-and-encode threads, each with its own stream and nvJPEG encoder.
  std::size_t encoders = 4;
};

/// Where a pipeline's threads spent their time (milliseconds; encoder figures summed over the
/// encoder threads): what limits it. Summed over devices for a batch.
struct JpegPipelineStats {
  std::size_t batches = 0;          ///< decode calls
  std::size_t files = 0;            ///< files decoded by nvJPEG
  double setup_ms = 0;              ///< from construction until the decoder's nvJPEG states were ready
  double decode_ms = 0;             ///< the decode thread in nvJPEG's decode (queueing a batch, waiting for one)
  double decode_submit_ms = 0;      ///< of which inside the JPEG engine's batched call (nvJPEG's host work)
  double decoder_waiting_ms = 0;    ///< the decode thread waiting for files (after set-up)
  double decoder_blocked_ms = 0;    ///< the decode thread waiting for an encoder thread to take an image
  double encode_ms = 0;             ///< encoder threads filtering and encoding
  double encoders_waiting_ms = 0;   ///< encoder threads waiting for decoded images
  double first_result_ms = 0;       ///< from construction until the first file was done
  double last_result_ms = 0;        ///< from construction until the last file was done
  std::size_t peak_decoded_bytes = 0;  ///< most pixel bytes of decoded images held at once
  JpegPipelineStats& operator+=(const JpegPipelineStats& other) noexcept;
};

/// One device's JPEG files -> filtered JPEG files (docs/gpu-jpeg.md, "Pipeline"). submit() reads
/// a file's headers on the calling thread and queues it; one decode thread takes batches of
/// queued files to nvJPEG (the JPEG engine where the GPU has one), and encoder threads filter
/// each decoded image on their own stream and encode it, while the next batch decodes. Device
/// images come from one pool and are reused. Each file's result goes to `done` (called on a
/// pipeline thread, once per submitted id). Failures are per file: the device failing as a
/// whole fails the files it held, and the next batch starts with new nvJPEG states.
class JpegPipeline {
 public:
  using Done = std::function<void(std::size_t id, JpegJobResult result)>;
  /// Starts the threads; the decoder's nvJPEG set-up runs at once, beside whatever the caller does
  /// next. `filter` nullptr: no filter (--no-filter). `filter` must outlive the pipeline.
  JpegPipeline(int device, const Filter* filter, const ConvolveOptions& options, const JpegOutputOptions& output,
               const JpegPipelineOptions& sizes, Done done);
  ~JpegPipeline();  ///< finish()
  JpegPipeline(const JpegPipeline&) = delete;
  JpegPipeline& operator=(const JpegPipeline&) = delete;

  /// Queues `file` (its bytes must stay valid until done(id)); waits while the pipeline is full.
  /// `markers`: the file's, walked already by its reader (else walked here).
  void submit(std::size_t id, std::span<const std::uint8_t> file, std::optional<JpegMarkers> markers = std::nullopt);
  /// The same with the file's own job (filter, options: a server's pipeline serves many commands);
  /// `job` must stay valid until done(id). Its options' device is the pipeline's.
  void submit(std::size_t id, std::span<const std::uint8_t> file, const JpegJobSettings& job,
              std::optional<JpegMarkers> markers = std::nullopt);
  /// Waits until every submitted file is done and the threads have ended. Never throws.
  void finish() noexcept;
  /// Where the threads spent their time; complete after finish().
  [[nodiscard]] JpegPipelineStats stats() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// The pipeline for a few files at once (single-image mode): one device, one encoder thread.
class JpegFilterJob {
 public:
  /// Starts the nvJPEG set-up at once; failures come back per file from run().
  explicit JpegFilterJob(int device, const Filter* filter, const ConvolveOptions& options,
                         const JpegOutputOptions& output);
  ~JpegFilterJob();
  JpegFilterJob(const JpegFilterJob&) = delete;
  JpegFilterJob& operator=(const JpegFilterJob&) = delete;

  /// Decodes, filters and encodes `files` (once per job), with their walked markers when
  /// `markers` holds one per file. Per-file failures come back in the results.
  [[nodiscard]] std::vector<JpegJobResult> run(const std::vector<std::span<const std::uint8_t>>& files,
                                               std::vector<JpegMarkers> markers = {});

 private:
  std::vector<JpegJobResult> results_;
  std::mutex mutex_;
  std::unique_ptr<JpegPipeline> pipeline_;
};

/// What `cuconv serve` keeps running between commands: one GPU JPEG pipeline per device, its
/// nvJPEG handles, states, encoders and device pools set up once, so that one JPEG pays no set-up.
/// run() hands a file to a device's pipeline and waits for its result; many callers at once share
/// the pipeline's batches.
class WarmJpeg {
 public:
  /// Starts a pipeline on each of `devices` (their set-up runs on their own threads at once).
  explicit WarmJpeg(const std::vector<int>& devices);
  ~WarmJpeg();
  WarmJpeg(const WarmJpeg&) = delete;
  WarmJpeg& operator=(const WarmJpeg&) = delete;

  /// Decodes, filters and encodes `file` on `device` (one of the constructor's) with `job`.
  [[nodiscard]] JpegJobResult run(int device, std::span<const std::uint8_t> file, const JpegJobSettings& job,
                                  std::optional<JpegMarkers> markers = std::nullopt);

  struct Device;

 private:
  std::vector<std::unique_ptr<Device>> devices_;
};


}  // namespace cuconv::codec
