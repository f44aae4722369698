// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `cuconv serve` keeps warm between its clients' commands: the devices it serves, a running
// pipeline of each GPU codec on each (engine::WarmGpuCodecs: handles, states and pools set up
// once) and each device's images in flight, so that the next image is dealt to the least loaded
// device. The set-up (CUDA contexts, kernels of the common filters, the GPU codecs) runs on a
// thread of its own from construction; what needs it waits for it, what does not (--help, a
// parse error) never does.
#include "engine/gpu_codec_pipeline.hpp"
#include "engine/gpu_codec_route.hpp"
#include "engine/least_loaded.hpp"

#include <cuconv/convolve.hpp>

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cuconv::engine {

/// What `cuconv serve` keeps running between commands: a pipeline per device for each GPU codec
/// that can be used, its handles, states, encoders and device pools set up once, so that one file
/// pays no set-up. run() hands a file to a device's pipeline and waits for its result; many
/// callers at once share the pipeline's batches.
class WarmGpuCodecs {
 public:
  /// Starts a pipeline of each of `codecs` on each of `devices` (their set-up runs at once).
  WarmGpuCodecs(const std::vector<const codec::GpuCodecFormat*>& codecs, const std::vector<int>& devices);
  ~WarmGpuCodecs();
  WarmGpuCodecs(const WarmGpuCodecs&) = delete;
  WarmGpuCodecs& operator=(const WarmGpuCodecs&) = delete;

  /// Whether `codec` runs here on `device`.
  [[nodiscard]] bool serves(const codec::GpuCodecFormat& codec, int device) const noexcept;
  /// The codecs' names, for the log ("nvjpeg").
  [[nodiscard]] std::string names() const;
  /// Decodes, filters and encodes `file` with `codec` on `device` (one of the constructor's).
  [[nodiscard]] GpuJobResult run(const codec::GpuCodecFormat& codec, int device, std::span<const std::uint8_t> file,
                                 const GpuJobSettings& job, std::unique_ptr<codec::FileWalk> walk = nullptr);
  /// The same without waiting: `done` gets the result on a pipeline thread. `file` and `job`
  /// must stay valid until then (a served batch's files go in as their readers load them).
  void submit(const codec::GpuCodecFormat& codec, int device, std::span<const std::uint8_t> file,
              const GpuJobSettings& job, std::unique_ptr<codec::FileWalk> walk, std::function<void(GpuJobResult)> done);

  struct Pipeline;

 private:
  std::vector<std::unique_ptr<Pipeline>> pipelines_;
};

class WarmGpu {
 public:
  /// `devices`: the CUDA devices to serve, checked to exist; empty: every device there is.
  /// `gpu_memory`: the most device memory one image may use (ConvolveOptions::gpu_memory_limit) on
  /// a command that sets no limit of its own, and the cap of one that sets a larger one; 0: none.
  WarmGpu(std::vector<int> devices, std::uint64_t gpu_memory);
  ~WarmGpu();
  WarmGpu(const WarmGpu&) = delete;
  WarmGpu& operator=(const WarmGpu&) = delete;

  /// After the set-up: the devices served; empty without a usable CUDA device (the CPU path).
  [[nodiscard]] const std::vector<int>& devices();
  /// After the set-up: why no device is served (empty when some are), one line for the log.
  [[nodiscard]] const std::string& setup_note();
  /// After the set-up: the GPU codecs' pipelines; nullptr when no GPU codec can be used.
  [[nodiscard]] WarmGpuCodecs* gpu_codecs();
  [[nodiscard]] std::uint64_t gpu_memory() const noexcept { return gpu_memory_; }
  /// Device memory of the workspaces kept between images (all of them while no image is in
  /// flight), in bytes; 0 before the set-up is done (`cuconv serve --status`). Never waits.
  [[nodiscard]] std::uint64_t kept_workspace_bytes();

  /// A device for one image, the one with the fewest images in flight (ties: the lowest index),
  /// counted as busy until the lease ends.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept
        : owner_(other.owner_), slot_(other.slot_), device_(other.device_), workspace_(std::move(other.workspace_)) {
      other.owner_ = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    [[nodiscard]] int device() const noexcept { return device_; }
    /// One of the device's kept workspaces (stream, device planes, pinned staging, grown to the
    /// largest image so far), this lease's alone until it ends; nullptr on no device.
    [[nodiscard]] GpuWorkspace* workspace();

   private:
    friend class WarmGpu;
    Lease(WarmGpu* owner, std::size_t slot, int device) : owner_(owner), slot_(slot), device_(device) {}
    WarmGpu* owner_ = nullptr;
    std::size_t slot_ = 0;  ///< the device's entry in devices_
    int device_ = -1;
    std::unique_ptr<GpuWorkspace> workspace_;
  };
  /// Waits for the set-up; a lease on no device (-1) when none is served.
  [[nodiscard]] Lease take();

 private:
  void set_up(std::vector<int> asked);
  void wait_ready();

  std::uint64_t gpu_memory_ = 0;
  std::vector<int> devices_;
  std::string setup_note_;
  std::unique_ptr<engine::WarmGpuCodecs> gpu_codecs_;
  std::shared_future<void> ready_;
  std::mutex mutex_;
  LeastLoaded load_;  ///< per entry of devices_
  /// Per entry of devices_: workspaces no lease holds now. Kept between commands, so an image
  /// allocates device memory only when it is larger than every one before it (cudaFree would
  /// wait for the whole device, stalling the other clients' images).
  /// Room is reserved for every workspace made (spare or held), so a lease gives its back without
  /// allocating.
  std::vector<std::vector<std::unique_ptr<GpuWorkspace>>> free_workspaces_;
  std::vector<std::size_t> workspaces_made_;  ///< per entry of devices_
};

/// The limit an image of a served command gets: the command's own (`asked`, 0: none) within the
/// server's (`server`, 0: none).
[[nodiscard]] std::uint64_t served_memory_limit(std::uint64_t asked, std::uint64_t server) noexcept;

}  // namespace cuconv::engine
