// SPDX-License-Identifier: Apache-2.0
// The single-image GPU codec job (gpu_filter_job.hpp).
#include "engine/gpu_filter_job.hpp"

#include <cuconv/error.hpp>

#include <utility>

namespace cuconv::engine {

GpuFilterJob::GpuFilterJob(const codec::GpuCodecFormat& codec, int device, const Filter* filter,
                           const ConvolveOptions& options, const codec::GpuOutputOptions& output) {
  GpuPipelineOptions sizes;
  sizes.encoders = 1;
  pipeline_ =
      std::make_unique<GpuCodecPipeline>(codec, device, filter, options, output, sizes,
                                         [this](std::size_t, GpuJobResult result) { result_ = std::move(result); });
}

GpuFilterJob::~GpuFilterJob() = default;

GpuJobResult GpuFilterJob::run(std::span<const std::uint8_t> file, std::unique_ptr<codec::FileWalk> walk) {
  if (!pipeline_) throw Error(ErrorKind::internal, "GpuFilterJob::run: called twice");
  pipeline_->submit(0, file, std::move(walk));
  pipeline_->finish();  // done() ran on a pipeline thread that finish() joined
  pipeline_.reset();
  return std::move(result_);
}

}  // namespace cuconv::engine
