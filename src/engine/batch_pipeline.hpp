// SPDX-License-Identifier: Apache-2.0
#pragma once
// The batch pipeline: many images through the per-image operation's stages (image_operation.hpp),
// with the stages overlapping:
//
//   readers (jobs) --queue per device--> filter threads (per device) --queue--> writers (jobs)
//   load_image: read, decode, orient      filter_image, or the device's        encode_image, write_image
//                                         GPU codec pipeline (GPU codec route)
//
// Reading and encoding run on CPU threads; each filter thread calls cuconv::convolve() with a
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
#include "engine/files.hpp"
#include "engine/gpu_codec_pipeline.hpp"
#include "engine/image_operation.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cuconv::engine {

struct BatchOptions {
  /// What every image shares (filter, convolve options, codec, write options); `convolve.device`
  /// is replaced by each filter thread's device.
  engine::RunSettings run;
  /// Each item's route (engine::choose_route), decided once by the caller; empty: decided here
  /// before any work (a --codec gpu refusal is then thrown by run_batch).
  std::vector<engine::Route> routes;
  engine::Files* files = nullptr;  ///< the file system, or a client's; nullptr: engine::local_files()
  std::vector<int>
      devices;  ///< CUDA devices, images dealt by progress (the least busy takes the next); empty: run.convolve.device
  std::size_t jobs = 1;                       ///< reader threads, and as many writer threads
  std::size_t filter_threads_per_device = 2;  ///< --gpu-threads; two, so one image's copies overlap another's kernel
  bool fail_fast = false;                     ///< stop scheduling work at the first failure
  /// Called by each filter thread before its first image, while reading has begun: the caller's
  /// check that the GPU is usable (CUDA's initialisation takes a while). An exception from it stops
  /// the batch, and run_batch rethrows it after the threads have ended; no output is written.
  std::function<void()> wait_for_gpu;
  /// Polled by every stage between images: once it returns true (e.g. after SIGINT) no new image
  /// is started and none is filtered or written any more; writes in progress finish. Those not
  /// finished are reported as skipped, counted in BatchSummary::not_started. Unset: never.
  std::function<bool()> stop_requested;
  engine::GpuPipelineOptions gpu_pipeline;  ///< GPU codec route: batch size and encoder threads per device
  /// The caller's process ends after the batch: the GPU codec pipelines' device resources (codec
  /// states, image pools, streams) are left to the operating system instead of torn down one by one.
  bool process_exits_after = false;
};

using ItemStatus = engine::ImageStatus;
using ItemTimes = engine::ImageTimes;
using ItemReport = engine::ImageReport;
using engine::to_string;

struct BatchSummary {
  std::vector<ItemReport> items;  ///< in the order of the plan
  std::size_t ok = 0;
  std::size_t failed = 0;
  std::size_t skipped = 0;
  std::size_t existing_outputs = 0;  ///< of the skipped: outputs that existed (no --overwrite)
  /// Of the skipped: outputs that appeared while this process worked on them (another process
  /// writing into the same folder published first); counted in existing_outputs too.
  std::size_t lost_races = 0;
  std::size_t not_started = 0;  ///< of the skipped: left undone because the batch stopped
  bool stop_requested = false;  ///< BatchOptions::stop_requested said stop before the end
  double wall_ms = 0;
  /// Most images held at once (reading, queued, filtering, writing): at most
  /// 2 x jobs + 3 x (filter threads), however many inputs there are.
  std::size_t peak_images_held = 0;
  double gpu_setup_ms = 0;  ///< longest time a filter thread spent in wait_for_gpu and creating its context and stream
  engine::GpuPipelineStats gpu_codec;     ///< the GPU codec pipelines' threads, summed over codecs and devices
  ExitCode first_failure = ExitCode::ok;  ///< exit code of the failure that happened first
  ExitCode exit_code = ExitCode::ok;      ///< batch_exit_code()
};

/// Called once per item as it finishes (ok, failed or skipped), one call at a time, from the
/// thread that finished it; `done` of `total` items are finished so far (not counting those a
/// stopped batch never started, which are reported too: a progress line then counts only
/// finished images).
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

}  // namespace cuconv::engine
