// SPDX-License-Identifier: Apache-2.0
#pragma once
// Files in, filtered files of the same format out, on one GPU, through a GPU codec
// (codec/gpu_codec.hpp): decode (batched), filter on the device (convolve()'s device overload),
// encode, with the input's metadata. A file the codec cannot decode (a CMYK JPEG ...) is decoded
// by OpenCV, filtered, encoded by the codec's host encoder, and says why. Which jobs come here is
// gpu_codec_route.hpp's choice; the code is gpu_codec_pipeline.cpp. No CUDA headers (pimpl).
#include "codec/gpu_codec.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cuconv::engine {

/// One file's job: its filter (nullptr: none, --no-filter), convolve options and output options.
struct GpuJobSettings {
  const Filter* filter = nullptr;
  ConvolveOptions options;
  codec::GpuOutputOptions output;
};

/// What happened to one file.
struct GpuJobResult {
  std::vector<std::uint8_t> encoded;    ///< the output file's bytes; empty on failure
  std::optional<Error> error;           ///< the file's failure (bad_input: not a decodable file; gpu ...)
  std::string decoder;                  ///< GpuDecoded::decoder, or "opencv"
  std::string encoder;                  ///< GpuCodecFormat::name, or "opencv"
  std::string decoder_fallback;         ///< why OpenCV decoded it; empty when the codec did
  std::optional<Variant> variant_used;  ///< unset without a filter (--no-filter)
  std::string gpu_fallback;             ///< ConvolveResult::fallback_reason on the OpenCV decode path
  std::vector<std::string>
      warnings;  ///< input blocks not copied into the output and why ("ICC profile dropped: ..."), one line each
  int width = 0;
  int height = 0;
  int channels = 0;
  double decode_ms = 0;  ///< this file's share of the batch's decode (wall)
  double filter_ms = 0;  ///< wall, queueing and running the filter
  double encode_ms = 0;  ///< wall, encoding and copying the bytes out
  /// A single image's own pipeline (GpuFilterJob): how long the command waited for the set-up
  /// (the CUDA context, the codec's handle and states) beyond what ran beside the file's read,
  /// and how long the pipeline took to shut down. 0 through a warm or a batch pipeline.
  double setup_wait_ms = 0;
  double shutdown_ms = 0;
};

/// Sizes of one device's GPU codec pipeline.
struct GpuPipelineOptions {
  /// Most files per decode call: a JPEG engine is fastest with large batches.
  std::size_t batch = 128;
  /// Most decoded bytes per decode call (large images make smaller batches); decoded images
  /// waiting for an encoder hold at most twice this (the decoder waits for room).
  std::size_t batch_bytes = std::size_t{1536} << 20;
  /// Filter-and-encode threads, each with its own stream and encoder.
  std::size_t encoders = 4;
};

/// Where a pipeline's threads spent their time (milliseconds; encoder figures summed over the
/// encoder threads): what limits it. Summed over devices for a batch.
struct GpuPipelineStats {
  std::size_t batches = 0;             ///< decode calls
  std::size_t files = 0;               ///< files decoded by the GPU codec
  double setup_ms = 0;                 ///< from construction until the decoder's states were ready
  double decode_ms = 0;                ///< the decode thread in the codec's decode (queueing a batch, waiting for one)
  double decode_submit_ms = 0;         ///< of which inside the library's batched call (its host work)
  double decoder_waiting_ms = 0;       ///< the decode thread waiting for files (after set-up)
  double decoder_blocked_ms = 0;       ///< the decode thread waiting for an encoder thread to take an image
  double encode_ms = 0;                ///< encoder threads filtering and encoding
  double encoders_waiting_ms = 0;      ///< encoder threads waiting for decoded images
  double first_result_ms = 0;          ///< from construction until the first file was done
  double last_result_ms = 0;           ///< from construction until the last file was done
  std::size_t peak_decoded_bytes = 0;  ///< most pixel bytes of decoded images held at once
  GpuPipelineStats& operator+=(const GpuPipelineStats& other) noexcept;
};

/// One device's files -> filtered files through one GPU codec (docs/gpu-jpeg.md, "Pipeline").
/// submit() reads a file's headers on the calling thread and queues it; one decode thread takes
/// batches of queued files to the codec's decoder (the JPEG engine where the GPU has one), and
/// encoder threads filter each decoded image on their own stream and encode it, while the next
/// batch decodes. Device images come from one pool and are reused. Each file's result goes to
/// `done` (called on a pipeline thread, once per submitted id). Failures are per file: the device
/// failing as a whole fails the files it held, and the next batch starts with new codec states.
class GpuCodecPipeline {
 public:
  using Done = std::function<void(std::size_t id, GpuJobResult result)>;
  /// Starts the threads; the decoder's set-up runs at once, beside whatever the caller does next.
  /// `filter` nullptr: no filter (--no-filter). `codec` and `filter` must outlive the pipeline.
  GpuCodecPipeline(const codec::GpuCodecFormat& codec, int device, const Filter* filter, const ConvolveOptions& options,
                   const codec::GpuOutputOptions& output, const GpuPipelineOptions& sizes, Done done);
  ~GpuCodecPipeline();  ///< finish()
  GpuCodecPipeline(const GpuCodecPipeline&) = delete;
  GpuCodecPipeline& operator=(const GpuCodecPipeline&) = delete;

  /// Queues `file` (its bytes must stay valid until done(id)); waits while the pipeline is full.
  /// `walk`: what the file's reader found (GpuCodecFormat::read), else nullptr (walked here).
  void submit(std::size_t id, std::span<const std::uint8_t> file, std::unique_ptr<codec::FileWalk> walk = nullptr);
  /// The same with the file's own job (filter, options: a server's pipeline serves many commands);
  /// `job` must stay valid until done(id). Its options' device is the pipeline's.
  void submit(std::size_t id, std::span<const std::uint8_t> file, const GpuJobSettings& job,
              std::unique_ptr<codec::FileWalk> walk = nullptr);
  /// Waits until every submitted file is done and the threads have ended. Never throws.
  void finish() noexcept;
  /// Where the threads spent their time; complete after finish().
  [[nodiscard]] GpuPipelineStats stats() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace cuconv::engine
