// SPDX-License-Identifier: Apache-2.0
// The batch pipeline: readers, filter threads per device, writers, bounded queues; each stage is
// the per-image operation's own (image_operation.cpp).
#include "engine/batch_pipeline.hpp"

#include "engine/bounded_queue.hpp"
#include "engine/in_flight.hpp"
#include "engine/least_loaded.hpp"
#include "engine/stage_threads.hpp"
#include "engine/warm_gpu.hpp"

#include <cuconv/image_io.hpp>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace cuconv::engine {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

constexpr std::string_view kStoppedReason = "not processed: the batch stopped at the first failure (`fail_fast`)";
constexpr std::string_view kNoGpuReason = "not processed: the batch stopped, the GPU is not usable";
constexpr std::string_view kInterruptedReason = "not processed: the batch was interrupted";
constexpr std::string_view kExistsReason = "output exists; left unchanged (use `overwrite` to replace it)";
constexpr std::string_view kAppearedReason =
    "output appeared while this image was processed (another process wrote it); left unchanged";

class Pipeline {
 public:
  Pipeline(const std::vector<BatchItem>& items, const BatchOptions& options, const ItemObserver& observer)
      : items_(items),
        options_(options),
        settings_(options.run),
        files_(options.files != nullptr ? *options.files : engine::local_files()),
        observer_(observer),
        states_(items.size()),
        jobs_(options.jobs == 0 ? 1 : options.jobs) {
    lane_devices_ = options.devices.empty() ? std::vector<int>{settings_.convolve.device} : options.devices;
    const std::size_t per_lane = options.filter_threads_per_device == 0 ? 1 : options.filter_threads_per_device;
    threads_per_lane_ = per_lane;
    lane_load_ = engine::LeastLoaded(lane_devices_.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      ItemState& state = states_[i];
      state.task.input = state.report.input = items[i].input;
      state.task.output = state.report.output = items[i].output;
      // Each item's route, decided once: the caller's, or here before any work.
      state.route =
          options.routes.size() == items.size() ? options.routes[i] : engine::choose_route(state.task, settings_);
      if (const codec::GpuCodecFormat* used = state.route.gpu_codec;
          used != nullptr && std::find(codecs_used_.begin(), codecs_used_.end(), used) == codecs_used_.end())
        codecs_used_.push_back(used);
    }
    gpu_codec_ = !codecs_used_.empty();
    // GPU codec items pass through the filter queue as compressed bytes on their way to the
    // device's codec pipeline, which batches them: room for a batch keeps the readers going.
    const std::size_t queued = gpu_codec_ ? per_lane + std::max<std::size_t>(options.gpu_pipeline.batch, 1) : per_lane;
    for (std::size_t lane = 0; lane < lane_devices_.size(); ++lane)
      filter_queues_.push_back(std::make_unique<BoundedQueue<Work>>(queued));
    // Room for one finished image per filter thread: writers take them as soon as they are free.
    write_queue_ = std::make_unique<BoundedQueue<Work>>(per_lane * lane_devices_.size());
  }

  ~Pipeline() {
    if (options_.process_exits_after)
      for (auto& pipeline : codec_pipelines_) static_cast<void>(pipeline.release());  // finished; exit frees it
  }

  BatchSummary run() {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (kept_existing(i))
        skip_existing(i, kExistsReason);
      else
        todo_.push_back(i);
    }
    run_stages();
    if (batch_error_) std::rethrow_exception(batch_error_);
    for (std::size_t i = 0; i < items_.size(); ++i)
      if (states_[i].report.status == ItemStatus::pending) skip_stopped(i);

    BatchSummary summary;
    for (ItemState& state : states_) summary.items.push_back(std::move(state.report));
    for (const ItemReport& r : summary.items) {
      summary.ok += r.status == ItemStatus::ok;
      summary.failed += r.status == ItemStatus::failed;
      summary.skipped += r.status == ItemStatus::skipped;
    }
    summary.existing_outputs = existing_outputs_;
    summary.lost_races = lost_races_;
    summary.not_started = not_started_;
    summary.stop_requested = stop_requested_;
    summary.wall_ms = ms_since(start);
    summary.gpu_setup_ms = std::max(gpu_setup_ms_, codec_stats_.setup_ms);
    summary.gpu_codec = codec_stats_;
    summary.peak_images_held = peak_held_images_.load();
    summary.first_failure = first_failure_;
    summary.exit_code = batch_exit_code(summary, options_.fail_fast);
    return summary;
  }

 private:
  void run_stages() {
    // Last out: no warm pipeline's callback may reach this batch after it has gone.
    const WarmWait warm_wait{warm_in_flight_};
    std::vector<std::jthread> readers, filters, writers;
    try {
      // Each device's pipeline of each GPU codec used starts its set-up now, while the readers
      // load files: codec_pipelines_[codec's place in codecs_used_ * lanes + lane]. A server's
      // warm pipeline (set up already) takes the place of one of its own (left empty).
      for (std::size_t lane = 0; lane < lane_devices_.size(); ++lane) {
        ConvolveOptions convolve_options = settings_.convolve;
        convolve_options.device = lane_devices_[lane];
        lane_jobs_.push_back(
            {settings_.apply_filter ? &settings_.filter : nullptr, convolve_options, settings_.gpu_output});
      }
      for (const codec::GpuCodecFormat* used : codecs_used_)
        for (std::size_t lane = 0; lane < lane_devices_.size(); ++lane) {
          if (settings_.warm_codecs != nullptr && settings_.warm_codecs->serves(*used, lane_devices_[lane])) {
            codec_pipelines_.emplace_back();
            continue;
          }
          const engine::GpuJobSettings& job = lane_jobs_[lane];
          codec_pipelines_.push_back(std::make_unique<engine::GpuCodecPipeline>(
              *used, lane_devices_[lane], job.filter, job.options, job.output, options_.gpu_pipeline,
              [this](std::size_t item, engine::GpuJobResult result) { gpu_codec_done(item, std::move(result)); }));
        }
      // One thread of each stage (and lane) first, then the others, which the stages can do
      // without when the address space runs out; readers last in each round, so that no image has
      // taken the memory the other stacks need yet.
      for (const bool first : {true, false}) {
        if (settings_.apply_filter || gpu_codec_)
          for (std::size_t lane = 0; lane < lane_devices_.size(); ++lane)
            start_threads(
                filters, first ? 1 : threads_per_lane_ - 1, [this, lane] { filter_loop(lane); }, first);
        start_threads(
            writers, first ? 1 : jobs_ - 1, [this] { write_loop(); }, first);
        start_threads(
            readers, first ? 1 : jobs_ - 1, [this] { read_loop(); }, first);
      }
    } catch (...) {
      // A thread could not start: unblock the others so the jthreads can join, then report.
      stopping_ = true;
      for (auto& queue : filter_queues_) queue->close();
      for (auto& pipeline : codec_pipelines_)
        if (pipeline) pipeline->finish();
      warm_wait.wait();
      write_queue_->close();
      throw;
    }
    // Each stage ends when the one before it has ended and its queue is drained.
    for (auto& t : readers) t.join();
    for (auto& queue : filter_queues_) queue->close();
    for (auto& t : filters) t.join();
    for (auto& pipeline : codec_pipelines_) {
      if (!pipeline) continue;
      pipeline->finish();
      codec_stats_ += pipeline->stats();
    }
    warm_wait.wait();  // the server's pipelines are done with this batch's files
    write_queue_->close();
    for (auto& t : writers) t.join();
  }

  /// Reader: load_image (read, decode, orient, checks) for the host route, the file's bytes for
  /// the GPU codec route; then to the item's device's filter queue (or straight to the writers).
  void read_loop() {
    if (settings_.apply_filter) lower_thread_priority(kCodecNiceSteps);
    while (!halted()) {
      const std::size_t position = next_todo_++;
      if (position >= todo_.size()) return;
      const std::size_t item = todo_[position];
      bool appeared = false;  // written meanwhile by another process: no need to read it
      if (!attempt(item, [&] { appeared = kept_existing(item); })) continue;
      if (appeared) {
        skip_existing(item, kAppearedReason, true);
        continue;
      }
      ItemState& state = states_[item];
      state.started = Clock::now();
      Work work{item, {}, HeldImage(held_images_, peak_held_images_)};
      const bool loaded = attempt(
          item, [&] { work.loaded = engine::load_image(state.task, settings_, state.route, files_, state.report); });
      if (!loaded) continue;
      const bool to_gpu = settings_.apply_filter || work.loaded.route.on_gpu_codec();
      if (!to_gpu) {
        if (!write_queue_->push(std::move(work))) skip_stopped(item);
        continue;
      }
      // Dealt by progress: the device with the fewest images in its hands takes the next one, so
      // a device that finishes early takes more.
      const std::size_t lane = take_lane();
      state.lane = lane;
      state.report.device = lane_devices_[lane];
      if (const codec::GpuCodecFormat* used = work.loaded.route.gpu_codec) {
        // Straight to the device's codec pipeline: its headers are read here, on a reader thread.
        // Kept with its item until the pipeline is done with it (gpu_codec_done).
        const auto place =
            static_cast<std::size_t>(std::find(codecs_used_.begin(), codecs_used_.end(), used) - codecs_used_.begin());
        Work& kept = state.at_gpu_codec.emplace(std::move(work));
        if (const auto& own = codec_pipelines_[place * lane_devices_.size() + lane]) {
          own->submit(item, kept.loaded.bytes, std::move(kept.loaded.walk));
          continue;
        }
        ++warm_in_flight_;
        settings_.warm_codecs->submit(*used, lane_devices_[lane], kept.loaded.bytes, lane_jobs_[lane],
                                      std::move(kept.loaded.walk), [this, item](engine::GpuJobResult result) {
                                        gpu_codec_done(item, std::move(result));
                                        if (--warm_in_flight_ == 0) warm_in_flight_.notify_all();
                                      });
        continue;
      }
      if (!filter_queues_[lane]->push(std::move(work))) {
        leave_lane(lane);
        skip_stopped(item);
      }
    }
  }

  /// The lane (device) with the fewest images in its hands, which takes one more; the server
  /// deals its commands the same way (engine::LeastLoaded).
  std::size_t take_lane() {
    const std::lock_guard lock(lanes_mutex_);
    return lane_load_.take();
  }
  void leave_lane(std::size_t lane) {
    const std::lock_guard lock(lanes_mutex_);
    lane_load_.give(lane);
  }

  void filter_loop(std::size_t lane) {
    engine::RunSettings settings = settings_;
    settings.convolve.device = lane_devices_[lane];
    // This thread's stream, device planes and pinned staging, grown to the largest image and
    // reused: no per-image allocation (cudaFree waits for the whole device, stalling the other
    // filter threads) and asynchronous copies.
    GpuWorkspace workspace;
    // Before the first image arrives (decoding it takes longer than this on most machines).
    const auto setup_start = Clock::now();
    try {
      if (options_.wait_for_gpu) options_.wait_for_gpu();
    } catch (...) {
      // Stop the batch; the loop below still drains this queue, so no decoder waits forever.
      std::lock_guard lock(mutex_);
      if (!batch_error_) batch_error_ = std::current_exception();
      stopping_ = true;
    }
    if (settings.convolve.variant != Variant::opencv && !stopping_) workspace.prepare(settings.convolve.device);
    {
      const double setup_ms = ms_since(setup_start);
      std::lock_guard lock(mutex_);
      gpu_setup_ms_ = std::max(gpu_setup_ms_, setup_ms);
    }
    while (auto work = filter_queues_[lane]->pop()) {
      const std::size_t item = work->item;
      if (halted()) {
        leave_lane(lane);
        skip_stopped(item);
        continue;
      }
      const bool filtered =
          attempt(item, [&] { (void)engine::filter_image(work->loaded, settings, &workspace, states_[item].report); });
      leave_lane(lane);
      if (filtered && !write_queue_->push(std::move(*work))) skip_stopped(item);
    }
  }

  /// A GPU codec item back from its pipeline (on a pipeline thread): to the writers, or failed.
  void gpu_codec_done(std::size_t item, engine::GpuJobResult r) {
    Work w = std::move(*states_[item].at_gpu_codec);
    states_[item].at_gpu_codec.reset();
    leave_lane(states_[item].lane);
    report_gpu_result(r, states_[item].report);
    if (r.error) {
      fail(item, exit_code_for(r.error->kind()), r.error->what());
      return;
    }
    w.loaded.bytes = std::move(r.encoded);
    if (!write_queue_->push(std::move(w))) skip_stopped(item);
  }

  /// Writer: encode_image and write_image (atomic; a name taken meanwhile is a lost race).
  void write_loop() {
    if (settings_.apply_filter) lower_thread_priority(kCodecNiceSteps);
    while (auto work = write_queue_->pop()) {
      const std::size_t item = work->item;
      if (halted()) {
        skip_stopped(item);
        continue;
      }
      bool lost_race = false;
      // Inside attempt(): asking about the output may fail too (a served client gone).
      const bool written = attempt(item, [&] {
        lost_race = kept_existing(item);  // no need to encode it
        if (lost_race) return;
        ItemState& state = states_[item];
        const std::vector<std::uint8_t> encoded =
            engine::encode_image(work->loaded, state.task, settings_, state.report);
        lost_race = !engine::write_image(state.task, encoded, settings_, files_, state.report);
      });
      work->loaded = {};
      if (lost_race)
        skip_existing(item, kAppearedReason, true);
      else if (written)
        finish(item, ItemStatus::ok);
    }
  }

  /// Whether the batch takes no more work: a failure under --fail-fast, an unusable GPU, or
  /// BatchOptions::stop_requested (remembered, so the reason is stable once seen).
  bool halted() {
    if (!stop_requested_ && options_.stop_requested && options_.stop_requested()) stop_requested_ = true;
    return stopping_ || stop_requested_;
  }

  /// Reports an item the batch stopped before finishing.
  void skip_stopped(std::size_t item) {
    const std::string_view reason = batch_error_ ? kNoGpuReason : stopping_ ? kStoppedReason : kInterruptedReason;
    ++not_started_;
    finish(item, ItemStatus::skipped, std::string(reason));
  }

  /// Whether an existing output keeps `item` from being written (no --overwrite).
  bool kept_existing(std::size_t item) const {
    return !settings_.overwrite && files_.kind(items_[item].output, false) != engine::FileKind::none;
  }

  void skip_existing(std::size_t item, std::string_view reason, bool appeared = false) {
    ++existing_outputs_;
    lost_races_ += appeared;
    finish(item, ItemStatus::skipped, std::string(reason));
  }

  /// Runs one stage of one item; a failure is recorded and reported, and the batch goes on.
  template <class Step>
  bool attempt(std::size_t item, Step&& step) {
    try {
      step();
      return true;
    } catch (const Error& e) {
      fail(item, exit_code_for(e.kind()), e.what());
    } catch (const std::exception& e) {
      fail(item, ExitCode::internal, std::string("internal error: ") + e.what());
    }
    return false;
  }

  void fail(std::size_t item, ExitCode code, std::string reason) {
    // Messages of read_image start with the input path, which the report names already.
    const std::string prefix = items_[item].input + ": ";
    if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
    finish(item, ItemStatus::failed, std::move(reason), code);
  }

  void finish(std::size_t item, ItemStatus status, std::string reason = {}, ExitCode code = ExitCode::ok) {
    std::lock_guard lock(mutex_);
    ItemReport& report = states_[item].report;
    report.status = status;
    report.reason = std::move(reason);
    report.exit_code = code;
    if (states_[item].started != Clock::time_point{}) report.times.total_ms = ms_since(states_[item].started);
    if (status == ItemStatus::failed) {
      if (first_failure_ == ExitCode::ok) first_failure_ = code;
      if (options_.fail_fast) stopping_ = true;
    }
    ++done_;
    if (observer_) {
      try {
        // Finished images only: after a stop, the ones never started are reported but not counted.
        observer_(report, done_ - not_started_, states_.size());
      } catch (...) {
        // Reporting must not take the pipeline down; the summary still has the item.
      }
    }
  }

  const std::vector<BatchItem>& items_;
  const BatchOptions& options_;
  const engine::RunSettings& settings_;
  engine::Files& files_;
  const ItemObserver& observer_;
  std::vector<ItemState> states_;  ///< one per item, in the order of the plan
  std::size_t jobs_;
  std::size_t threads_per_lane_ = 1;
  std::vector<int> lane_devices_;
  engine::LeastLoaded lane_load_;  ///< per lane: images taken and not yet filtered or back from the pipeline
  std::mutex lanes_mutex_;
  std::vector<std::size_t> todo_;  ///< items to process (existing outputs already skipped)
  std::atomic<std::size_t> existing_outputs_{0};
  std::atomic<std::size_t> lost_races_{0};
  std::atomic<std::size_t> not_started_{0};
  std::atomic<std::size_t> next_todo_{0};
  std::atomic<bool> stopping_{false};
  bool gpu_codec_ = false;                                 ///< some item takes a GPU codec's route
  std::vector<const codec::GpuCodecFormat*> codecs_used_;  ///< the GPU codecs some item takes
  std::atomic<bool> stop_requested_{false};                ///< BatchOptions::stop_requested returned true
  std::atomic<std::size_t> held_images_{0};                ///< images being decoded, queued, filtered or encoded
  std::atomic<std::size_t> peak_held_images_{0};
  std::vector<std::unique_ptr<BoundedQueue<Work>>> filter_queues_;          ///< one per device
  std::vector<std::unique_ptr<engine::GpuCodecPipeline>> codec_pipelines_;  ///< per codec used and device; empty: warm
  std::vector<engine::GpuJobSettings> lane_jobs_;                           ///< per device: the job of its files
  std::atomic<std::size_t> warm_in_flight_{0};                              ///< files in a server's warm pipelines
  engine::GpuPipelineStats codec_stats_;
  std::unique_ptr<BoundedQueue<Work>> write_queue_;
  std::mutex mutex_;  ///< guards finishing: status, counters, the observer call
  std::size_t done_ = 0;
  double gpu_setup_ms_ = 0;
  ExitCode first_failure_ = ExitCode::ok;
  std::exception_ptr batch_error_;  ///< what wait_for_gpu threw: the batch stops and run() rethrows it
};

}  // namespace

ExitCode batch_exit_code(const BatchSummary& summary, bool fail_fast) {
  if (summary.failed == 0) return ExitCode::ok;
  if (fail_fast || summary.ok + summary.failed == 1) return summary.first_failure;
  return ExitCode::some_inputs_failed;
}

BatchSummary run_batch(const std::vector<BatchItem>& items, const BatchOptions& options,
                       const ItemObserver& on_item_done) {
  return Pipeline(items, options, on_item_done).run();
}

}  // namespace cuconv::engine
