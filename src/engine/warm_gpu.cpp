// SPDX-License-Identifier: Apache-2.0
// The server's warm GPU state (warm_gpu.hpp), and its running GPU codec pipelines
// (engine::WarmGpuCodecs, gpu_codec_route.hpp): one per codec and device, each file's caller
// waiting on its own result.
#include "engine/warm_gpu.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

namespace cuconv::engine {

std::uint64_t served_memory_limit(std::uint64_t asked, std::uint64_t server) noexcept {
  if (server == 0) return asked;
  if (asked == 0) return server;
  return std::min(asked, server);
}

WarmGpu::WarmGpu(std::vector<int> devices, std::uint64_t gpu_memory) : gpu_memory_(gpu_memory) {
  ready_ = std::async(std::launch::async, [this, asked = std::move(devices)]() mutable {
             set_up(std::move(asked));
           }).share();
}

WarmGpu::~WarmGpu() {
  if (ready_.valid()) ready_.wait();
}

void WarmGpu::set_up(std::vector<int> asked) {
  std::string reason;
  if (!cuda_device_available(&reason)) {
    setup_note_ = "no usable CUDA device (" + reason + "); commands filter on the CPU";
    return;
  }
  const int count = cuda_device_count();
  if (asked.empty())
    for (int d = 0; d < count; ++d) asked.push_back(d);
  for (int d : asked)
    if (d >= 0 && d < count) devices_.push_back(d);
  load_ = LeastLoaded(devices_.size());
  free_workspaces_.resize(devices_.size());
  workspaces_made_.assign(devices_.size(), 0);
  // Each device's context and the kernels of the common filters, all devices at once: a small
  // image through `auto` on each.
  std::vector<std::thread> warming;
  for (int device : devices_) {
    warming.emplace_back([device] {
      const cv::Mat image(64, 64, CV_8UC3, cv::Scalar::all(128));
      ConvolveOptions options;
      options.device = device;
      for (const char* spec : {"gauss5", "box3"}) {
        try {
          (void)convolve(image, load_filter(spec), options);
        } catch (const std::exception&) {
          // A GPU fault here shows again, with its message, in the first command that meets it.
        }
      }
    });
  }
  for (std::thread& t : warming) t.join();
  std::vector<const codec::GpuCodecFormat*> usable;
  for (const codec::GpuCodecFormat& codec : codec::gpu_codecs()) {
    if (const std::string why = engine::gpu_codec_unusable_reason(codec); why.empty())
      usable.push_back(&codec);
    else
      setup_note_ += std::string(setup_note_.empty() ? "" : "; ") + "the GPU " + std::string(codec.format) +
                     " codec is off: " + why;
  }
  if (!usable.empty()) gpu_codecs_ = std::make_unique<engine::WarmGpuCodecs>(usable, devices_);
}

void WarmGpu::wait_ready() { ready_.wait(); }

const std::vector<int>& WarmGpu::devices() {
  wait_ready();
  return devices_;
}

const std::string& WarmGpu::setup_note() {
  wait_ready();
  return setup_note_;
}

engine::WarmGpuCodecs* WarmGpu::gpu_codecs() {
  wait_ready();
  return gpu_codecs_.get();
}

WarmGpu::Lease WarmGpu::take() {
  wait_ready();
  if (devices_.empty()) return {};
  const std::lock_guard lock(mutex_);
  const std::size_t slot = load_.take();
  return Lease(this, slot, devices_[slot]);
}

std::uint64_t WarmGpu::kept_workspace_bytes() {
  if (ready_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return 0;  // set_up sizes the lists
  const std::lock_guard lock(mutex_);
  std::uint64_t bytes = 0;
  for (const auto& spare : free_workspaces_) {
    for (const auto& workspace : spare) bytes += workspace->device_bytes();
  }
  return bytes;
}

GpuWorkspace* WarmGpu::Lease::workspace() {
  if (owner_ == nullptr || device_ < 0) return nullptr;
  if (workspace_) return workspace_.get();
  {
    const std::lock_guard lock(owner_->mutex_);
    auto& spare = owner_->free_workspaces_[slot_];
    if (!spare.empty()) {
      workspace_ = std::move(spare.back());
      spare.pop_back();
      return workspace_.get();
    }
    // Room among the spares first: ~Lease then gives the new one back without allocating.
    spare.reserve(++owner_->workspaces_made_[slot_]);
  }
  auto made = std::make_unique<GpuWorkspace>();
  made->prepare(device_);
  workspace_ = std::move(made);
  return workspace_.get();
}

WarmGpu::Lease::~Lease() {
  if (owner_ == nullptr) return;
  const std::lock_guard lock(owner_->mutex_);
  owner_->load_.give(slot_);
  if (workspace_) owner_->free_workspaces_[slot_].push_back(std::move(workspace_));  // within the reserved room
}

}  // namespace cuconv::engine

namespace cuconv::engine {

/// One codec's running pipeline on one device and what each file's caller wants done with its
/// result, by id.
struct WarmGpuCodecs::Pipeline {
  using Done = std::function<void(GpuJobResult)>;
  Pipeline(const codec::GpuCodecFormat& codec_, int device_)
      : codec(&codec_),
        device(device_),
        pipeline(codec_, device_, nullptr, ConvolveOptions{}, codec::GpuOutputOptions{}, GpuPipelineOptions{},
                 [this](std::size_t id, GpuJobResult result) {
                   Done done;
                   {
                     const std::lock_guard lock(mutex);
                     const auto at = waiting.find(id);
                     if (at == waiting.end()) return;
                     done = std::move(at->second);
                     waiting.erase(at);
                   }
                   done(std::move(result));
                 }) {}
  const codec::GpuCodecFormat* codec;
  int device;
  std::mutex mutex;
  std::size_t next_id = 0;
  std::map<std::size_t, Done> waiting;
  GpuCodecPipeline pipeline;  ///< last: its threads stop (finish) before the map goes
};

WarmGpuCodecs::WarmGpuCodecs(const std::vector<const codec::GpuCodecFormat*>& codecs, const std::vector<int>& devices) {
  for (const codec::GpuCodecFormat* codec : codecs)
    for (int device : devices) pipelines_.push_back(std::make_unique<Pipeline>(*codec, device));
}

WarmGpuCodecs::~WarmGpuCodecs() = default;

bool WarmGpuCodecs::serves(const codec::GpuCodecFormat& codec, int device) const noexcept {
  return std::any_of(pipelines_.begin(), pipelines_.end(),
                     [&](const std::unique_ptr<Pipeline>& p) { return p->codec == &codec && p->device == device; });
}

std::string WarmGpuCodecs::names() const {
  std::string names;
  const codec::GpuCodecFormat* last = nullptr;
  for (const auto& p : pipelines_) {  // codec by codec (the constructor's order)
    if (p->codec != last) names += (names.empty() ? "" : ", ") + std::string(p->codec->name);
    last = p->codec;
  }
  return names;
}

GpuJobResult WarmGpuCodecs::run(const codec::GpuCodecFormat& codec, int device, std::span<const std::uint8_t> file,
                                const GpuJobSettings& job, std::unique_ptr<codec::FileWalk> walk) {
  std::promise<GpuJobResult> promise;
  std::future<GpuJobResult> result = promise.get_future();
  submit(codec, device, file, job, std::move(walk), [&promise](GpuJobResult r) { promise.set_value(std::move(r)); });
  return result.get();
}

void WarmGpuCodecs::submit(const codec::GpuCodecFormat& codec, int device, std::span<const std::uint8_t> file,
                           const GpuJobSettings& job, std::unique_ptr<codec::FileWalk> walk,
                           std::function<void(GpuJobResult)> done) {
  const auto at = std::find_if(pipelines_.begin(), pipelines_.end(), [&](const std::unique_ptr<Pipeline>& p) {
    return p->codec == &codec && p->device == device;
  });
  if (at == pipelines_.end())
    throw Error(ErrorKind::internal, "WarmGpuCodecs::submit: " + std::string(codec.name) + " on device " +
                                         std::to_string(device) + " is not served");
  Pipeline& p = **at;
  std::size_t id = 0;
  {
    const std::lock_guard lock(p.mutex);
    id = p.next_id++;
    p.waiting.emplace(id, std::move(done));
  }
  p.pipeline.submit(id, file, job, std::move(walk));
}

}  // namespace cuconv::engine
