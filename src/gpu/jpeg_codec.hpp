#pragma once
// The GPU JPEG codec (nvJPEG): compressed bytes in host memory -> DeviceImage (8-bit BGR
// interleaved, or gray), and a device image -> JPEG bytes. Pixels never visit host memory.
// No CUDA or nvJPEG headers here (pimpl), so the batch engine and the CLI can include it.
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

/// Chroma subsampling of a colour encoding.
enum class Chroma { s420, s422, s444 };

/// Encoder settings.
struct JpegEncodeOptions {
  int quality = 95;  ///< 1..100, as OpenCV's IMWRITE_JPEG_QUALITY (default 95 there too)
  Chroma chroma = Chroma::s420;  ///< colour images; 4:2:0 is what OpenCV's imwrite writes by default
  /// APP segments (marker and length included) to insert after SOI / JFIF APP0.
  std::vector<std::span<const std::uint8_t>> app_segments;
};

/// nvJPEG handles, decoder and encoder states for one CUDA device, made for one thread (not
/// thread-safe; one codec per thread). Colour images are encoded 4:2:0, grayscale as one
/// component: what OpenCV's imwrite does by default. Throws Error{gpu} when nvJPEG or the device
/// cannot be used; destructors never throw.
/// A CV_8U image of `channels` channels at least `width` x `height`: one from `spare` when one
/// is large enough, else a new one, rounded up to whole tiles of 256 x 256 pixels so that images
/// of nearby sizes reuse it. fit() gives the view of the wanted size.
[[nodiscard]] DeviceImage reuse_or_allocate(std::vector<DeviceImage>* spare, int width, int height, int channels);
/// The top-left `width` x `height` pixels of `image`.
[[nodiscard]] DeviceImageView fit(const DeviceImage& image, int width, int height) noexcept;

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

  /// Decodes every file (baseline, extended and progressive Huffman; gray; any usual chroma
  /// subsampling) on `stream`, and waits for it. Per-file problems come back in the result;
  /// CUDA/nvJPEG failures throw Error{gpu}. Images of the right size are taken from `spare`
  /// (the previous batch's, given back) before new ones are allocated: cudaFree waits for the
  /// whole device, so a batch of equal-sized files allocates only at its start.
  [[nodiscard]] std::vector<DecodedJpeg> decode(const std::vector<std::span<const std::uint8_t>>& files,
                                                StreamHandle stream, std::vector<DeviceImage>* spare = nullptr);

  /// Encodes `image` (CV_8U, 3 channels BGR or 1 gray, on this codec's device) after the work
  /// queued on `stream`, and waits for it. Throws Error{usage} for other images, Error{gpu}.
  [[nodiscard]] std::vector<std::uint8_t> encode(ConstDeviceImageView image, const JpegEncodeOptions& options,
                                                 StreamHandle stream);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace cuconv::codec
