// SPDX-License-Identifier: Apache-2.0
// The GPU codec pipeline's stream and encoder warm-up (codec_stream.hpp).
#include "codec/codec_stream.hpp"

#include "gpu/cuda_check.hpp"
#include "gpu/memory/device_memory.hpp"

#include <opencv2/core/hal/interface.h>

#include <string>
#include <vector>

namespace cuconv::codec {

struct CodecStream::Owner {
  gpu::CudaStream stream;
};

CodecStream::CodecStream(Priority priority)
    : owner_(priority == Priority::high ? new Owner{gpu::CudaStream(gpu::CudaStream::high_priority)} : new Owner{}) {}
CodecStream::~CodecStream() = default;
CodecStream::CodecStream(CodecStream&&) noexcept = default;
CodecStream& CodecStream::operator=(CodecStream&&) noexcept = default;

StreamHandle CodecStream::get() const noexcept { return owner_->stream.get(); }

void warm_up_encoder(GpuCodec& codec, StreamHandle stream) {
  const DeviceImage tiny(16, 16, 3, CV_8U);
  const DeviceImageView v = tiny.view();
  CUCONV_CUDA_TRY(cudaMemset2DAsync(v.data, v.pitch, 0, static_cast<std::size_t>(v.width) * 3,
                                    static_cast<std::size_t>(v.height), stream));
  std::vector<std::string> warnings;
  static_cast<void>(codec.encode(v, GpuOutputOptions{}, GpuPlan{}, stream, warnings));
}

}  // namespace cuconv::codec
