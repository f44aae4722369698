// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a thread of the engine's GPU codec pipeline holds on the device besides its codec: its CUDA
// stream, and the encoder's first use paid at set-up. Owned here, below the engine, so that the
// engine makes no CUDA call. No CUDA headers.
#include "codec/gpu_codec.hpp"

#include <cuconv/device_image.hpp>

#include <memory>

namespace cuconv::codec {

/// One non-blocking CUDA stream on the current device, destroyed with its owner (move-only).
/// Throws Error{gpu} when the stream cannot be made.
class CodecStream {
 public:
  enum class Priority { normal, high };  ///< high: the device schedules its work first
  explicit CodecStream(Priority priority = Priority::normal);
  ~CodecStream();
  CodecStream(CodecStream&&) noexcept;
  CodecStream& operator=(CodecStream&&) noexcept;
  CodecStream(const CodecStream&) = delete;
  CodecStream& operator=(const CodecStream&) = delete;

  [[nodiscard]] StreamHandle get() const noexcept;

 private:
  struct Owner;
  std::unique_ptr<Owner> owner_;
};

/// One encode of a small blank image on `stream`, its output dropped: the encoder's first use (its
/// states, the library's lazy set-up) is paid here rather than by the first file.
void warm_up_encoder(GpuCodec& codec, StreamHandle stream);

}  // namespace cuconv::codec
