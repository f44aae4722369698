// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPU JPEG codec (nvJPEG): compressed bytes in host memory -> DeviceImage (8-bit BGR
// interleaved, or gray), and a device image -> JPEG bytes. Pixels never visit host memory.
// No CUDA or nvJPEG headers here (pimpl), so the batch engine and the CLI can include it.
#include "codec/gpu_codec.hpp"
#include "codec/jpeg_markers.hpp"

#include <cuconv/device_image.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::codec {

/// Whether nvJPEG can be loaded (it is loaded at run time); on false, `reason` says why. Does not
/// look for a CUDA device: cuda_device_available() does.
[[nodiscard]] bool nvjpeg_available(std::string* reason = nullptr);

/// One decoded file. Exactly one of: `image` filled; `not_supported` (nvJPEG cannot decode it,
/// decode it with OpenCV instead); `bad_file` (the bytes are not a decodable JPEG: the file's error).
struct DecodedJpeg {
  DeviceImage image;          ///< the allocation holding `view` (may be larger: reused between batches)
  DeviceImageView view;       ///< the pixels: 3 channels BGR (OpenCV's order) or 1 channel gray, CV_8U
  std::string not_supported;  ///< why OpenCV must decode it (CMYK, 12-bit, arithmetic ...)
  std::string bad_file;       ///< what is wrong with the bytes
  bool hardware = false;      ///< decoded on the GPU's JPEG engine (else the CUDA/hybrid decoder)
};

/// How one file will be decoded, found from its headers before any device work.
struct JpegPlan {
  /// The file's markers (frame, APP segments to copy into the output), walked once: the encoder
  /// reads them from here.
  JpegMarkers markers;
  int width = 0;
  int height = 0;
  int channels = 0;           ///< 3 (BGR) or 1 (gray)
  bool hardware = false;      ///< the GPU's JPEG engine takes it (else nvJPEG's CUDA decoder)
  std::string not_supported;  ///< why OpenCV must decode it instead
  std::string bad_file;       ///< what is wrong with the bytes
  [[nodiscard]] bool decodable() const noexcept { return not_supported.empty() && bad_file.empty(); }
};

/// Chroma subsampling of a colour encoding.
enum class Chroma { s420, s422, s444 };

/// Encoder settings.
struct JpegEncodeOptions {
  int quality = 95;              ///< 1..100, as OpenCV's IMWRITE_JPEG_QUALITY (default 95 there too)
  Chroma chroma = Chroma::s420;  ///< colour images; 4:2:0 is what OpenCV's imwrite writes by default
  /// APP segments (marker and length included) to insert after SOI / JFIF APP0.
  std::vector<std::span<const std::uint8_t>> app_segments;
};

/// nvJPEG decoder and encoder states for one CUDA device, for one thread (not thread-safe; one
/// codec per thread). The nvJPEG library handle is made once per device and shared; the states
/// are made on first use, so a codec that only encodes never pays for a decoder. Colour images
/// are encoded 4:2:0, grayscale as one component: what OpenCV's imwrite does by default. Throws
/// Error{gpu} when nvJPEG or the device cannot be used; destructors never throw.
class GpuJpegCodec {
 public:
  /// `device` becomes the calling thread's current device (-1: keep the current one).
  explicit GpuJpegCodec(int device = -1);
  ~GpuJpegCodec();
  GpuJpegCodec(GpuJpegCodec&&) noexcept;
  GpuJpegCodec& operator=(GpuJpegCodec&&) noexcept;
  GpuJpegCodec(const GpuJpegCodec&) = delete;
  GpuJpegCodec& operator=(const GpuJpegCodec&) = delete;

  /// "hardware" when the GPU has a JPEG engine (baseline files are decoded there, in one batch),
  /// else "cuda" (nvJPEG's GPU-assisted hybrid decoder).
  [[nodiscard]] std::string_view backend() const noexcept;

  /// Makes the decoder states now rather than at the first decode (they take a noticeable part
  /// of a second): for a thread that waits for its first files anyway.
  void prepare_decoder();

  /// Reads the headers of `file` (host only): its size, and which decoder takes it.
  [[nodiscard]] JpegPlan plan(std::span<const std::uint8_t> file);
  /// The same with `file`'s markers already walked (codec::read_walked_jpeg_file): the file's
  /// markers are not walked again.
  [[nodiscard]] JpegPlan plan(std::span<const std::uint8_t> file, JpegMarkers markers);

  /// Decodes every file (baseline, extended and progressive Huffman; gray; any usual chroma
  /// subsampling) on `stream`, and waits for it: the JPEG engine's files in one batched call, the
  /// others one by one. `plans` (from plan(), by any codec of the device) are found here when
  /// empty. Per-file problems come back in the result; CUDA/nvJPEG failures throw Error{gpu}.
  /// Images come from `pool` when given; `engine_call_ms`, when given, gets the host time spent
  /// inside the JPEG engine's batched call (nvJPEG's host work on the batch).
  [[nodiscard]] std::vector<DecodedJpeg> decode(const std::vector<std::span<const std::uint8_t>>& files,
                                                StreamHandle stream, DeviceImagePool* pool = nullptr,
                                                std::vector<JpegPlan> plans = {}, double* engine_call_ms = nullptr);

  /// Encodes `image` (CV_8U, 3 channels BGR or 1 gray, on this codec's device) after the work
  /// queued on `stream`, and waits for it; the bytes come back through page-locked memory.
  /// Throws Error{usage} for other images, Error{gpu}.
  [[nodiscard]] std::vector<std::uint8_t> encode(ConstDeviceImageView image, const JpegEncodeOptions& options,
                                                 StreamHandle stream);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace cuconv::codec
