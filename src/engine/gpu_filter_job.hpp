// SPDX-License-Identifier: Apache-2.0
#pragma once
// One file through a GPU codec in single-image mode: a GpuCodecPipeline of one device and one
// encoder thread, whose set-up starts at construction, beside the caller's reading of the file.
#include "engine/gpu_codec_pipeline.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

namespace cuconv::engine {

/// The pipeline for one file (single-image mode): one device, one encoder thread.
class GpuFilterJob {
 public:
  /// Starts the codec's set-up at once; a failure comes back from run().
  GpuFilterJob(const codec::GpuCodecFormat& codec, int device, const Filter* filter, const ConvolveOptions& options,
               const codec::GpuOutputOptions& output);
  ~GpuFilterJob();
  GpuFilterJob(const GpuFilterJob&) = delete;
  GpuFilterJob& operator=(const GpuFilterJob&) = delete;

  /// Decodes, filters and encodes `file` (once per job) with its reader's `walk`.
  [[nodiscard]] GpuJobResult run(std::span<const std::uint8_t> file, std::unique_ptr<codec::FileWalk> walk);

 private:
  GpuJobResult result_;
  std::unique_ptr<GpuCodecPipeline> pipeline_;
  std::chrono::steady_clock::time_point constructed_;  ///< when the set-up started
};

}  // namespace cuconv::engine
