// SPDX-License-Identifier: Apache-2.0
// The GPU codec pipeline (gpu_codec_pipeline.hpp): per device a decode thread (the codec's batched
// decode) and encoder threads (filter straight from the decoded device image on their own
// stream, then the codec's encode from the filtered one); files the codec refuses take the host
// reader of their format (codec::decode_image_bytes), the filter and the codec's host encoder on an encoder thread.
#include "engine/gpu_codec_pipeline.hpp"

#include "codec/codec_stream.hpp"
#include "codec/memory_image.hpp"
#include "engine/bounded_queue.hpp"
#include "engine/byte_budget.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>

namespace cuconv::engine {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

/// A submitted file on its way to the decoder.
struct Entry {
  std::size_t id = 0;
  std::span<const std::uint8_t> file;
  const GpuJobSettings* job = nullptr;  ///< the submitter's, or the pipeline's defaults
  codec::GpuPlan plan;
};

/// A decoded file (or one for OpenCV) on its way to an encoder thread.
struct Decoded {
  Entry entry;
  codec::GpuDecoded image;
  double decode_ms = 0;
  std::size_t held = 0;  ///< its pixel bytes as taken from State::held_bytes
};

/// The pixel bytes a plan decodes to.
std::size_t decoded_bytes(const codec::GpuPlan& plan) {
  return static_cast<std::size_t>(plan.width) * static_cast<std::size_t>(plan.height) *
         static_cast<std::size_t>(std::max(plan.channels, 1));
}

GpuJobResult failed(const Error& error) {
  GpuJobResult r;
  r.error = error;
  return r;
}

}  // namespace

struct GpuCodecPipeline::State {
  State(const codec::GpuCodecFormat& format_, int device_, const Filter* filter_, const ConvolveOptions& options_,
        const codec::GpuOutputOptions& output_, const GpuPipelineOptions& sizes_, Done done_)
      : format(format_),
        device(device_),
        defaults{filter_, options_, output_},
        sizes(sizes_),
        done(std::move(done_)),
        input(std::max<std::size_t>(sizes_.batch, 1) * 2),
        // Room for a whole decoded batch: the decoder goes on to the next batch at once, while the
        // encoder threads work through this one.
        decoded(std::max<std::size_t>(sizes_.batch, 1) + std::max<std::size_t>(sizes_.encoders, 1) * 2),
        held_bytes(2 * sizes_.batch_bytes) {
    defaults.options.device = device;
  }

  const codec::GpuCodecFormat& format;
  int device;
  GpuJobSettings defaults;  ///< the job of files submitted without their own
  GpuPipelineOptions sizes;
  Done done;
  const Clock::time_point started = Clock::now();
  mutable std::mutex stats_mutex;
  GpuPipelineStats stats;
  engine::BoundedQueue<Entry> input;
  engine::BoundedQueue<Decoded> decoded;
  codec::DeviceImagePool pool;
  std::mutex planners_mutex;
  std::vector<std::unique_ptr<codec::GpuCodec>> planners;  ///< header readers for submit(), one per caller at a time
  std::thread decoder;
  std::vector<std::thread> encoders;
  bool finished = false;
  /// Pixel bytes of decoded images not yet given back to the pool: at most two decode calls' worth.
  engine::ByteBudget held_bytes;

  void finish_with(std::size_t id, GpuJobResult result) noexcept {
    {
      const double now = ms_since(started);
      const std::lock_guard lock(stats_mutex);
      if (stats.first_result_ms == 0) stats.first_result_ms = now;
      stats.last_result_ms = std::max(stats.last_result_ms, now);
    }
    try {
      done(id, std::move(result));
    } catch (...) {
      // The caller's bookkeeping failed; nothing here can report it better.
    }
  }

  codec::GpuPlan plan(std::span<const std::uint8_t> file, std::unique_ptr<codec::FileWalk> walk) {
    std::unique_ptr<codec::GpuCodec> planner;
    {
      const std::lock_guard lock(planners_mutex);
      if (!planners.empty()) {
        planner = std::move(planners.back());
        planners.pop_back();
      }
    }
    if (!planner) planner = format.make(device);
    codec::GpuPlan p = planner->plan(file, std::move(walk));
    const std::lock_guard lock(planners_mutex);
    planners.push_back(std::move(planner));
    return p;
  }

  /// A thread's codec states, workspace and stream. They outlive the thread and go with the
  /// pipeline, so finishing a batch does not wait for their teardown (a process that ends right
  /// after may leave them to the operating system: BatchOptions::process_exits_after).
  struct Kit {
    std::unique_ptr<codec::GpuCodec> codec;
    std::optional<GpuWorkspace> workspace;
    std::optional<codec::CodecStream> stream;
  };
  std::mutex kits_mutex;
  std::deque<Kit> kits;  ///< one per thread; a deque keeps each thread's reference valid

  Kit& new_kit() {
    const std::lock_guard lock(kits_mutex);
    return kits.emplace_back();
  }

  /// Batches of queued files through the codec's decoder; bad files end here, the rest go on.
  void decode_loop() {
    Kit& kit = new_kit();
    std::unique_ptr<codec::GpuCodec>& codec = kit.codec;
    std::optional<codec::CodecStream>& stream = kit.stream;
    std::optional<Error> setup_error;
    const auto set_up = [&] {
      try {
        codec = format.make(device);
        codec->prepare_decoder();
        // Ahead of the encoder threads' kernels: what the engine decodes is converted and
        // handed on first, so the engine is never left waiting for its next batch.
        stream.emplace(codec::CodecStream::Priority::high);
        const std::vector<std::uint8_t> tiny = format.warm_up_file();
        const std::span<const std::uint8_t> file(tiny);
        for (codec::GpuDecoded& d : codec->decode({file}, {codec->plan(file, nullptr)}, stream->get(), pool, nullptr))
          pool.give(std::move(d.image));
        setup_error.reset();
      } catch (const Error& e) {
        codec.reset();
        setup_error = e;
      } catch (const std::exception& e) {
        codec.reset();
        setup_error = Error(ErrorKind::internal, std::string("internal error: ") + e.what());
      }
    };
    set_up();
    GpuPipelineStats mine;
    mine.setup_ms = ms_since(started);
    // The first batches are small, so that the encoder threads start early; then full size.
    constexpr std::size_t kFirstBatch = 8;
    std::size_t most = std::min<std::size_t>(std::max<std::size_t>(sizes.batch, 1), kFirstBatch);
    std::size_t full = std::max<std::size_t>(sizes.batch, 1);
    while (true) {
      auto t = Clock::now();
      std::vector<Entry> popped = input.pop_some(most, std::chrono::milliseconds(2));
      mine.decoder_waiting_ms += ms_since(t);
      if (popped.empty()) break;
      std::vector<std::size_t> bytes(popped.size(), 0);
      for (std::size_t i = 0; i < popped.size(); ++i) {
        if (!popped[i].plan.decodable()) continue;  // large images make the next batches smaller
        bytes[i] = std::max<std::size_t>(decoded_bytes(popped[i].plan), 1);
        full = std::clamp<std::size_t>(sizes.batch_bytes / bytes[i], 1, std::max<std::size_t>(sizes.batch, 1));
      }
      most = std::min(full, most * 2);
      // Decode calls of at most batch_bytes (at least one file each): what was popped may be split.
      for (std::size_t first = 0, last = 0; first < popped.size(); first = last) {
        std::size_t batch_held = 0;
        while (last < popped.size() && (last == first || batch_held + bytes[last] <= sizes.batch_bytes))
          batch_held += bytes[last++];
        std::vector<Entry> batch(std::make_move_iterator(popped.begin() + static_cast<std::ptrdiff_t>(first)),
                                 std::make_move_iterator(popped.begin() + static_cast<std::ptrdiff_t>(last)));
        const std::vector<std::size_t> held(bytes.begin() + static_cast<std::ptrdiff_t>(first),
                                            bytes.begin() + static_cast<std::ptrdiff_t>(last));
        if (!codec) set_up();
        if (!codec) {  // no device: these files fail, the next call tries again
          for (Entry& e : batch) finish_with(e.id, failed(*setup_error));
          continue;
        }
        std::vector<std::span<const std::uint8_t>> files;
        std::vector<codec::GpuPlan> plans;
        for (const Entry& e : batch) {
          files.push_back(e.file);
          plans.push_back(e.plan);
        }
        t = Clock::now();
        held_bytes.take(batch_held);
        mine.decoder_blocked_ms += ms_since(t);
        std::vector<codec::GpuDecoded> images;
        t = Clock::now();
        try {
          double engine_call_ms = 0;
          images = codec->decode(files, std::move(plans), stream->get(), pool, &engine_call_ms);
          mine.decode_submit_ms += engine_call_ms;
          mine.decode_ms += ms_since(t);
          ++mine.batches;
        } catch (const std::exception& e) {
          codec.reset();  // the device failed as a whole: this batch fails, the next starts afresh
          stream.reset();
          const auto* error = dynamic_cast<const Error*>(&e);
          const Error why =
              error != nullptr ? *error : Error(ErrorKind::internal, std::string("internal error: ") + e.what());
          held_bytes.give(batch_held);
          for (Entry& entry : batch) finish_with(entry.id, failed(why));
          continue;
        }
        const double share = ms_since(t) / static_cast<double>(batch.size());
        t = Clock::now();
        for (std::size_t i = 0; i < batch.size(); ++i) {
          if (!images[i].bad_file.empty()) {
            held_bytes.give(held[i]);
            finish_with(batch[i].id, failed(Error(ErrorKind::bad_input, images[i].bad_file)));
            continue;
          }
          mine.files += images[i].view.data != nullptr;
          Decoded d{std::move(batch[i]), std::move(images[i]), share, held[i]};
          if (!decoded.push(std::move(d))) break;  // not reached: closed only after this thread ends
        }
        mine.decoder_blocked_ms += ms_since(t);
      }
    }
    const std::lock_guard lock(stats_mutex);
    stats += mine;
  }

  /// Decoded images through the filter and the codec's encoder; files for OpenCV through OpenCV
  /// and the codec's host encoder.
  void encode_loop() {
    Kit& kit = new_kit();
    std::unique_ptr<codec::GpuCodec>& codec = kit.codec;
    std::optional<GpuWorkspace>& workspace = kit.workspace;
    std::optional<codec::CodecStream>& stream = kit.stream;
    GpuPipelineStats mine;
    try {
      set_up_encoder(codec, workspace, stream);  // before the first image; a failure is met again then
    } catch (const Error&) {
      codec.reset();
    }
    while (true) {
      auto t = Clock::now();
      std::optional<Decoded> d = decoded.pop();
      mine.encoders_waiting_ms += ms_since(t);
      if (!d) break;
      t = Clock::now();
      const std::size_t id = d->entry.id;
      GpuJobResult result;
      try {
        if (!codec) set_up_encoder(codec, workspace, stream);
        const codec::GpuPlan& plan = d->entry.plan;  // the file was walked once, before the decode
        GpuJobSettings job = *d->entry.job;
        job.options.device = device;
        if (!d->image.not_supported.empty()) {
          result.decoder_fallback = std::string(format.name) + " cannot decode it: " + d->image.not_supported;
          run_on_opencv(d->entry.file, plan, job, *codec, *workspace, result);
        } else {
          result.decode_ms = d->decode_ms;
          filter_and_encode(d->image, plan, job, *codec, *workspace, stream->get(), result);
        }
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::gpu) {  // the device as a whole: new states for the next image
          codec.reset();
          workspace.reset();
          stream.reset();
        }
        result = failed(e);
      } catch (const cv::Exception& e) {
        result = failed(Error(ErrorKind::bad_input, std::string("OpenCV: ") + e.what()));
      } catch (const std::exception& e) {
        result = failed(Error(ErrorKind::internal, std::string("internal error: ") + e.what()));
      }
      if (result.error) result.encoded.clear();
      pool.give(std::move(d->image.image));
      held_bytes.give(d->held);
      mine.encode_ms += ms_since(t);
      finish_with(id, std::move(result));
    }
    const std::lock_guard lock(stats_mutex);
    stats += mine;
  }

  /// An encoder thread's codec, workspace and stream, and one small encode: the encoder's first
  /// use is paid while the decoder sets up.
  void set_up_encoder(std::unique_ptr<codec::GpuCodec>& codec, std::optional<GpuWorkspace>& workspace,
                      std::optional<codec::CodecStream>& stream) {
    codec = format.make(device);
    workspace.emplace();
    workspace->prepare(device);
    stream.emplace();
    codec::warm_up_encoder(*codec, stream->get());
  }

  void filter_and_encode(const codec::GpuDecoded& in, const codec::GpuPlan& plan, const GpuJobSettings& job,
                         codec::GpuCodec& codec, GpuWorkspace& workspace, StreamHandle stream, GpuJobResult& result) {
    const Filter* filter = job.filter;
    result.decoder = in.decoder;
    const DeviceImageView source = in.view;
    result.width = source.width;
    result.height = source.height;
    result.channels = source.channels;
    DeviceImage filtered;
    DeviceImageView filtered_view;
    if (filter != nullptr) {
      const auto f = Clock::now();
      filtered = pool.take(source.width, source.height, source.channels);
      filtered_view = codec::fit(filtered, source.width, source.height);
      result.variant_used = convolve(source, filtered_view, *filter, job.options, workspace, stream);
      result.filter_ms = ms_since(f);
    }
    const auto e = Clock::now();
    try {
      result.encoded =
          codec.encode(filter != nullptr ? filtered_view : source, job.output, plan, stream, result.warnings);
    } catch (...) {
      pool.give(std::move(filtered));
      throw;
    }
    pool.give(std::move(filtered));  // the encode waited for the stream: the image is free
    result.encoder = format.name;
    result.encode_ms = ms_since(e);
  }

  /// OpenCV's decode, the filter and the codec's host encode for a file the codec refused.
  void run_on_opencv(std::span<const std::uint8_t> file, const codec::GpuPlan& plan, const GpuJobSettings& job,
                     codec::GpuCodec& codec, GpuWorkspace& workspace, GpuJobResult& result) {
    const Filter* filter = job.filter;
    const auto t = Clock::now();
    // The host reader read_image would use for a file of this format (a planar TIFF named .jpg
    // is read whole, as OpenCV 4.6 would not); the caller's messages name the file.
    cv::Mat image = codec::decode_image_bytes("", file, &result.decoder);
    result.decode_ms = ms_since(t);
    result.width = image.cols;
    result.height = image.rows;
    result.channels = image.channels();
    if (filter != nullptr) {
      const auto f = Clock::now();
      ConvolveResult filtered = convolve(image, *filter, job.options, workspace);
      image = std::move(filtered.image);
      result.variant_used = filtered.variant_used;
      result.gpu_fallback = std::move(filtered.fallback_reason);
      result.filter_ms = ms_since(f);
    }
    const auto e = Clock::now();
    result.encoder = "opencv";
    result.encoded = codec.encode_host(image, job.output, plan, result.warnings);
    result.encode_ms = ms_since(e);
  }
};

GpuCodecPipeline::GpuCodecPipeline(const codec::GpuCodecFormat& codec, int device, const Filter* filter,
                                   const ConvolveOptions& options, const codec::GpuOutputOptions& output,
                                   const GpuPipelineOptions& sizes, Done done)
    : state_(std::make_unique<State>(codec, device, filter, options, output, sizes, std::move(done))) {
  State& s = *state_;
  try {
    s.decoder = std::thread([&s] { s.decode_loop(); });
    for (std::size_t i = 0; i < std::max<std::size_t>(sizes.encoders, 1); ++i)
      s.encoders.emplace_back([&s] { s.encode_loop(); });
  } catch (...) {
    finish();
    throw;
  }
}

GpuCodecPipeline::~GpuCodecPipeline() { finish(); }

void GpuCodecPipeline::submit(std::size_t id, std::span<const std::uint8_t> file,
                              std::unique_ptr<codec::FileWalk> walk) {
  submit(id, file, state_->defaults, std::move(walk));
}

void GpuCodecPipeline::submit(std::size_t id, std::span<const std::uint8_t> file, const GpuJobSettings& job,
                              std::unique_ptr<codec::FileWalk> walk) {
  State& s = *state_;
  Entry entry{id, file, &job, {}};
  try {
    entry.plan = s.plan(file, std::move(walk));
  } catch (const Error& e) {
    s.finish_with(id, failed(e));
    return;
  } catch (const std::exception& e) {
    s.finish_with(id, failed(Error(ErrorKind::internal, std::string("internal error: ") + e.what())));
    return;
  }
  if (!s.input.push(std::move(entry)))
    s.finish_with(id, failed(Error(ErrorKind::internal, "the GPU codec pipeline has finished")));
}

void GpuCodecPipeline::finish() noexcept {
  State& s = *state_;
  if (s.finished) return;
  s.finished = true;
  s.input.close();
  if (s.decoder.joinable()) s.decoder.join();
  s.decoded.close();
  for (std::thread& t : s.encoders)
    if (t.joinable()) t.join();
}

GpuPipelineStats GpuCodecPipeline::stats() const {
  const std::lock_guard lock(state_->stats_mutex);
  GpuPipelineStats stats = state_->stats;
  stats.peak_decoded_bytes = state_->held_bytes.peak();
  return stats;
}

GpuPipelineStats& GpuPipelineStats::operator+=(const GpuPipelineStats& other) noexcept {
  batches += other.batches;
  files += other.files;
  setup_ms = std::max(setup_ms, other.setup_ms);
  decode_ms += other.decode_ms;
  decoder_waiting_ms += other.decoder_waiting_ms;
  decoder_blocked_ms += other.decoder_blocked_ms;
  decode_submit_ms += other.decode_submit_ms;
  encode_ms += other.encode_ms;
  encoders_waiting_ms += other.encoders_waiting_ms;
  first_result_ms = first_result_ms == 0         ? other.first_result_ms
                    : other.first_result_ms == 0 ? first_result_ms
                                                 : std::min(first_result_ms, other.first_result_ms);
  last_result_ms = std::max(last_result_ms, other.last_result_ms);
  peak_decoded_bytes = std::max(peak_decoded_bytes, other.peak_decoded_bytes);
  return *this;
}

}  // namespace cuconv::engine
