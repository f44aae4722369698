// SPDX-License-Identifier: Apache-2.0
// The single-image GPU codec job (gpu_filter_job.hpp).
#include "engine/gpu_filter_job.hpp"

#include <cuconv/error.hpp>

#include <algorithm>
#include <chrono>
#include <utility>

namespace cuconv::engine {

GpuFilterJob::GpuFilterJob(const codec::GpuCodecFormat& codec, int device, const Filter* filter,
                           const ConvolveOptions& options, const codec::GpuOutputOptions& output)
    : constructed_(std::chrono::steady_clock::now()) {
  GpuPipelineOptions sizes;
  sizes.encoders = 1;
  pipeline_ =
      std::make_unique<GpuCodecPipeline>(codec, device, filter, options, output, sizes,
                                         [this](std::size_t, GpuJobResult result) { result_ = std::move(result); });
}

GpuFilterJob::~GpuFilterJob() = default;

GpuJobResult GpuFilterJob::run(std::span<const std::uint8_t> file, std::unique_ptr<codec::FileWalk> walk) {
  if (!pipeline_) throw Error(ErrorKind::internal, "GpuFilterJob::run: called twice");
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  const Clock::time_point submitted = Clock::now();
  pipeline_->submit(0, file, std::move(walk));
  pipeline_->finish();  // done() ran on a pipeline thread that finish() joined
  // The set-up ran from construction, beside the file's read; the command waited for the rest.
  result_.setup_wait_ms = std::max(0.0, pipeline_->stats().setup_ms - ms(constructed_, submitted));
  const Clock::time_point finished = Clock::now();
  pipeline_.reset();
  result_.shutdown_ms = ms(finished, Clock::now());
  return std::move(result_);
}

}  // namespace cuconv::engine
