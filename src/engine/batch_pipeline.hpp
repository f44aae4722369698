#pragma once
// The batch engine: many images through read -> filter -> write, with the stages overlapping.
//
//   decode threads (jobs) --queue per device--> filter threads (per device) --queue--> write threads (jobs)
//
// Decoding and encoding run on CPU threads; each filter thread calls cuconv::convolve() with a
// GpuWorkspace of its own (stream, device planes, pinned staging kept between images), so one
// image's upload/kernel/download overlaps the other thread's and the decoding and encoding of
// others. Queues are bounded: at most 2 x jobs + 3 x (filter threads)
// images are in memory at once, whether the batch has 10 inputs or 10000. Every image uses the
// same filter, so concurrent calls upload identical weights (convolve() keeps the filter in
// __constant__ memory for some variants).
//
// No logging and no formatting here: the caller gets a report per image as it finishes and
// decides what to print.
#include "engine/batch_plan.hpp"
#include "engine/gpu_jpeg_route.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cuconv::batch {

struct BatchOptions {
  Filter filter;
  ConvolveOptions convolve;           ///< `device` is replaced by each filter thread's device
  std::vector<int> devices;           ///< CUDA devices, images dealt round-robin; empty: convolve.device
  std::size_t jobs = 1;               ///< decode threads, and as many write threads
  std::size_t filter_threads_per_device = 2;  ///< --gpu-threads; two, so one image's copies overlap another's kernel
  bool overwrite = false;             ///< replace existing outputs (otherwise they are skipped)
  bool fail_fast = false;             ///< stop scheduling work at the first failure
  bool skip_filter = false;           ///< --no-filter: decode and encode only (benchmark aid)
  ReadLimits read_limits;             ///< --max-pixels, as in single-image mode
  WriteOptions write;                 ///< --quality, --compression; `overwrite` above and each image's metadata replace its own
  bool strip_metadata = false;        ///< --strip: outputs get no EXIF, ICC or XMP
  bool auto_orient = false;           ///< --auto-orient: pixels rotated upright by EXIF Orientation before filtering
  /// Called by each filter thread before its first image, while decoding has begun: the caller's
  /// check that the GPU is usable (CUDA's initialisation takes a while). An exception from it stops
  /// the batch, and run_batch rethrows it after the threads have ended; no output is written.
  std::function<void()> wait_for_gpu;
  /// Polled by every stage between images: once it returns true (e.g. after SIGINT) no new image
  /// is started and none is filtered or written any more; writes in progress finish. Those not
  /// finished are reported as skipped, counted in BatchSummary::not_started. Unset: never.
  std::function<bool()> stop_requested;
  /// JPEG -> JPEG items for the GPU codec (docs/gpu-jpeg.md): true for the items that take it
  /// (decided by codec::choose_gpu_codec). Their reader loads the file's bytes; the filter thread
  /// hands them to its device's codec::JpegPipeline (batched decode, filter, encode); the writer
  /// writes the bytes. Unset: no item takes it.
  std::function<bool(const BatchItem&)> use_gpu_codec;
  codec::JpegOutputOptions jpeg_output;      ///< quality and metadata of those outputs
  codec::JpegPipelineOptions jpeg_pipeline;  ///< batch size and encoder threads per device
};

enum class ItemStatus { pending, ok, failed, skipped };

[[nodiscard]] std::string_view to_string(ItemStatus status) noexcept;

/// Wall times of one image's stages, in milliseconds.
struct ItemTimes {
  double read_ms = 0;    ///< read and decode
  double filter_ms = 0;  ///< ConvolveResult::times.kernel_ms: GPU kernels (CUDA events) or filter2D
  double upload_ms = 0;  ///< host to device copies (GPU variants)
  double download_ms = 0;
  double write_ms = 0;   ///< encode, write, fsync, rename
  double total_ms = 0;   ///< from the start of reading to the end of writing, queue waits included
};

struct ItemReport {
  std::string input;
  std::string output;
  ItemStatus status = ItemStatus::pending;
  std::string reason;                 ///< why it failed or was skipped; empty when ok
  ExitCode exit_code = ExitCode::ok;  ///< a failure's own exit code (what cuconv IN OUT would exit with)
  ItemTimes times;
  int device = -1;                    ///< the CUDA device it was given to (-1: current / CPU)
  std::string gpu_fallback;           ///< ConvolveResult::fallback_reason: `auto` filtered it with OpenCV
  std::optional<Variant> variant_used;  ///< ConvolveResult::variant_used; unset when not filtered
  std::string decoder = "opencv";     ///< "nvjpeg-hardware", "nvjpeg-cuda" or "opencv"
  std::string encoder = "opencv";     ///< "nvjpeg" or "opencv"
  std::string decoder_fallback;       ///< GPU codec items: why OpenCV decoded it
};

struct BatchSummary {
  std::vector<ItemReport> items;  ///< in the order of the plan
  std::size_t ok = 0;
  std::size_t failed = 0;
  std::size_t skipped = 0;
  std::size_t existing_outputs = 0;  ///< of the skipped: outputs that existed (no --overwrite)
  /// Of the skipped: outputs that appeared while this process worked on them (another process
  /// writing into the same folder published first); counted in existing_outputs too.
  std::size_t lost_races = 0;
  std::size_t not_started = 0;       ///< of the skipped: left undone because the batch stopped
  bool stop_requested = false;       ///< BatchOptions::stop_requested said stop before the end
  double wall_ms = 0;
  /// Most images held at once (decoding, queued, filtering, encoding): at most
  /// 2 x jobs + 3 x (filter threads), however many inputs there are.
  std::size_t peak_images_held = 0;
  double gpu_setup_ms = 0;  ///< longest time a filter thread spent in wait_for_gpu and creating its context and stream
  codec::JpegPipelineStats gpu_jpeg;  ///< the GPU JPEG pipelines' threads, summed over devices
  ExitCode first_failure = ExitCode::ok;  ///< exit code of the failure that happened first
  ExitCode exit_code = ExitCode::ok;      ///< batch_exit_code()
};

/// Called once per item as it finishes (ok, failed or skipped), one call at a time, from the
/// thread that finished it; `done` of `total` items are finished so far.
using ItemObserver = std::function<void(const ItemReport& item, std::size_t done, std::size_t total)>;

/// Processes `items`. An existing output is left alone and reported as skipped unless
/// `overwrite`: checked before the work, again before each image is decoded and encoded, and
/// atomically when the result is published, so that two processes writing into one folder each
/// write an output at most once and the loser reports it as skipped. A failing item is reported
/// and the others go on, unless `fail_fast`, which stops scheduling at the first failure and
/// reports what was not finished as skipped (as `stop_requested` does). No output is ever
/// partial (write_image_atomic). Throws only when the pipeline itself cannot start, or what
/// `options.wait_for_gpu` threw.
[[nodiscard]] BatchSummary run_batch(const std::vector<BatchItem>& items, const BatchOptions& options,
                                     const ItemObserver& on_item_done = {});

/// The process exit code for these results: ok when nothing failed; with `fail_fast`, the first
/// failure's own code; when only one item was attempted, its own code; else some_inputs_failed.
[[nodiscard]] ExitCode batch_exit_code(const BatchSummary& summary, bool fail_fast);

}  // namespace cuconv::batch
