// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file convolve.hpp
/// The library entry point: filter one decoded image with cv::filter2D semantics on the GPU or
/// with OpenCV. No CUDA headers: callers need only OpenCV's core module.
#include <cuconv/device_image.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core/mat.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv {

/// Kernel strategies. basic .. cached follow PMPP ch. 7; `fast` is ours (interleaved channels,
/// register sliding window, separable filters in one pass); `fft` is overlap-save with cuFFT for
/// large filters; `tensor` runs filters on tensor cores: 8-bit separable ones with the row sums
/// there, other 8-bit ones up to 17x17 and float ones up to 31x31 densely (else as `fast`);
/// `opencv` is the CPU reference. New values are added at the end.
enum class Variant { automatic, opencv, basic, constmem, tiled, tiled_halo, cached, fast, fft, tensor };

/// A variant's row in kVariantList: its command-line name, one line of help, whether it runs a
/// CUDA kernel.
struct VariantInfo {
  Variant value;
  std::string_view name;  ///< as typed on the command line (lower case; parsing ignores case)
  std::string_view help;  ///< one line for --help and docs/cli.md
  bool gpu = false;
};

/// Every variant, in the order --help and the docs list them: the one list that parsing, --help,
/// gpu_variants(), the GPU launchers' check, the benchmark and the test sweeps read. A new variant
/// is its enumerator above and its row here.
inline constexpr std::array<VariantInfo, 10> kVariantList{{
    {Variant::automatic, "auto", "a GPU variant picked per filter and image, OpenCV without a GPU"},
    {Variant::opencv, "opencv", "cv::filter2D on the CPU (the reference)"},
    {Variant::basic, "basic", "one thread per output pixel, filter in global memory", true},
    {Variant::constmem, "constmem", "as basic, filter in constant memory", true},
    {Variant::tiled, "tiled", "block = input tile in shared memory; all threads load, the inner ones compute", true},
    {Variant::tiled_halo, "tiled-halo", "block = output tile; each thread loads its pixel, the block loads the halo",
     true},
    {Variant::cached, "cached", "output tile in shared memory; halo read from global memory through L1", true},
    {Variant::fast, "fast", "several adjacent outputs per thread from vector loads", true},
    {Variant::tensor, "tensor",
     "filters on tensor cores: 8-bit separable row sums; dense filters up to 31x31 (8-bit, 16-bit, float); else as "
     "fast",
     true},
    {Variant::fft, "fft", "cuFFT overlap-save, for large filters", true},
}};
/// Border modes; `wrap` is not in cv::filter2D, the opencv variant emulates it by padding.
enum class Border { reflect101, reflect, replicate, constant, wrap };
/// Output depth; `same` keeps the input depth. Allowed pairs are those of cv::filter2D.
enum class Depth { same, u8, u16, s16, f32 };

[[nodiscard]] std::string_view to_string(Variant v) noexcept;
[[nodiscard]] std::string_view to_string(Border b) noexcept;
[[nodiscard]] std::string_view to_string(Depth d) noexcept;
/// An OpenCV depth's name: "8U", "16U", "16S", "32F" ... (any CV_ depth; Depth names some).
[[nodiscard]] std::string depth_name(int depth);
[[nodiscard]] std::optional<Variant> parse_variant(std::string_view s) noexcept;
[[nodiscard]] std::optional<Border> parse_border(std::string_view s) noexcept;
[[nodiscard]] std::optional<Depth> parse_depth(std::string_view s) noexcept;
/// All variants that run on the GPU, in documentation order.
[[nodiscard]] const std::vector<Variant>& gpu_variants() noexcept;

/// How the `opencv` variant runs cv::filter2D: as a user's call would (`as_called`: for large
/// kernels filter2D switches to a DFT), kept on its direct-summation path (`direct_sum`), or
/// `reference`: direct summation, in double precision when the output is float (a large float
/// sum rounds about as much as the float pass rule allows), the reference --compare and the GPU
/// tests use; or `exact_sum`: the same direct sum in double for every output depth, rounded half
/// to even and saturated once at the end (the exact sum the pass rule is judged against; at 16
/// bits filter2D's float sums round some values to another integer: docs/accuracy.md, "16-bit outputs: the exact sum").
/// `same_bits`: as_called's results bit for bit, summed separably where that provably gives the same
/// bits (docs/accuracy.md, "The CPU's separable path"); what `auto` runs on the CPU.
enum class OpenCvMethod { as_called, direct_sum, reference, exact_sum, same_bits };

struct ConvolveOptions {
  Variant variant = Variant::automatic;
  Border border = Border::reflect101;
  double border_value = 0.0;  ///< for Border::constant, in pixel units of the input
  int anchor_x = -1;          ///< -1: the filter's own anchor
  int anchor_y = -1;
  double delta = 0.0;  ///< added before rounding (on top of the filter's offset)
  Depth depth = Depth::same;
  bool keep_alpha = false;  ///< 4-channel input: pass alpha through instead of filtering it
  OpenCvMethod opencv_method = OpenCvMethod::as_called;  ///< for Variant::opencv
  int bench_runs = 0;  ///< GPU variants: also time the kernels this many more times (--bench)
  /// CUDA device for the GPU variants; -1: the calling thread's current device. A device >= 0
  /// becomes the calling thread's current device (the CUDA runtime keeps one per host thread),
  /// so threads that each own a device can call convolve() side by side.
  int device = -1;
  /// Device memory the GPU variants may use, in bytes; 0: the device's free memory less a safety
  /// margin. An image whose device planes (plus the variant's scratch) need more is filtered in
  /// horizontal strips (README "Limits and errors").
  std::uint64_t gpu_memory_limit = 0;
  /// GPU variants with a GpuWorkspace: copy a pageable image into the workspace's page-locked
  /// staging on several host threads (the process's copy pool: up to 4, within the CPUs the
  /// process may run on), for a caller whose cores idle while it waits (the Python package).
  /// Batch workers, whose other cores decode images, leave it off. The result is the same.
  bool parallel_host_copies = false;
};

/// Wall/event times of the stages, in milliseconds (0 when a stage did not run).
struct StageTimes {
  double upload_ms = 0;
  double kernel_ms = 0;  ///< GPU kernels (CUDA events) or the cv::filter2D call
  double download_ms = 0;
  // With ConvolveOptions::bench_runs > 0 (CUDA events, after the first run as warm-up):
  int bench_runs = 0;
  double kernel_median_ms = 0;  ///< median of the kernel runs
  double copy_roof_ms = 0;      ///< median device-to-device copy of the same bytes (read + write)
  double bytes_moved = 0;       ///< input + output bytes of one run
};

struct ConvolveResult {
  cv::Mat image;
  Variant variant_used = Variant::opencv;  ///< what `automatic` resolved to
  StageTimes times;
  int strips = 1;  ///< horizontal strips the GPU filtered the image in (1: the whole image at once)
  /// Set when `automatic` chose a GPU variant that failed with a GPU error and OpenCV filtered the
  /// image instead: what failed. Empty otherwise (explicit GPU variants never fall back).
  std::string fallback_reason;
};

/// Whether a CUDA device can be used; on false, `reason` says why (no driver, no device ...).
[[nodiscard]] bool cuda_device_available(std::string* reason = nullptr);
/// "CUDA runtime 12.4, driver supports CUDA 12.6" (or ", no NVIDIA driver"), for --version.
[[nodiscard]] std::string cuda_versions();
/// One line per CUDA device ("0: NVIDIA H100 80GB HBM3, compute capability 9.0, 79.1 GiB"); empty,
/// with `reason` set as cuda_device_available sets it, when there is none.
[[nodiscard]] std::vector<std::string> describe_gpus(std::string* reason = nullptr);

/// Number of usable CUDA devices (0 without a driver or device).
[[nodiscard]] int cuda_device_count() noexcept;

/// The variant `automatic` resolves to for this filter on this machine, for images of `channels`
/// interleaved channels and `width` x `height` pixels (0 x 0: not known, taken as small). With a GPU
/// the rule is the current device's (its kind of GPU may move size thresholds), as convolve's
/// own choice is.
[[nodiscard]] Variant choose_variant(const Filter& filter, const ConvolveOptions& options, bool gpu_present,
                                     int input_depth, int output_depth, int channels = 1, int width = 0,
                                     int height = 0);

/// OpenCV depth code (CV_8U ...) of the output for a given input depth, or Error{usage} when
/// cv::filter2D does not support the pair.
[[nodiscard]] int resolve_output_depth(int input_depth, Depth requested);

/// Filters `src` (1, 3 or 4 channels; 8U, 16U or 32F). Throws cuconv::Error.
[[nodiscard]] ConvolveResult convolve(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options);

namespace gpu {
struct WorkspaceState;   // src/gpu/memory/workspace.hpp (CUDA types)
struct WorkspaceAccess;  // the library's way in
}  // namespace gpu

/// What a thread that filters many images keeps between convolve() calls: its CUDA stream, its
/// device planes and its pinned host staging buffers. Buffers grow to the largest image seen and
/// are then reused, so a batch allocates (and frees, which waits for the whole device) only
/// while it meets larger images, and copies run asynchronously from pinned memory, overlapping
/// other threads' kernels. Not thread-safe: one workspace per thread. It holds its memory, on the
/// device it was first used with, until it is destroyed (or used on another device).
class GpuWorkspace {
 public:
  GpuWorkspace();
  ~GpuWorkspace();
  GpuWorkspace(GpuWorkspace&&) noexcept;
  GpuWorkspace& operator=(GpuWorkspace&&) noexcept;
  GpuWorkspace(const GpuWorkspace&) = delete;
  GpuWorkspace& operator=(const GpuWorkspace&) = delete;

  /// Device memory held now (planes and filter weights), in bytes.
  [[nodiscard]] std::uint64_t device_bytes() const noexcept;
  /// Pinned host memory held now, in bytes.
  [[nodiscard]] std::uint64_t pinned_bytes() const noexcept;
  /// Makes `device`'s CUDA context (-1: the calling thread's current device) and this
  /// workspace's stream now, so the first image does not wait for them (context creation takes
  /// a large part of a second). Sets `device` as the calling thread's current device, and makes
  /// threads of this process that wait for it block instead of spinning (cudaDeviceScheduleBlockingSync),
  /// so waiting filter threads leave their cores to other work. Never throws: a device that cannot
  /// be used fails the first convolve() instead, with its reason.
  void prepare(int device = -1) noexcept;
  /// Device allocations made so far (planes, weights and staging regrown); a batch of equal-sized
  /// images makes them for the first image only.
  [[nodiscard]] std::uint64_t allocations() const noexcept;

 private:
  friend struct gpu::WorkspaceAccess;
  std::unique_ptr<gpu::WorkspaceState> state_;
};

/// convolve() reusing `workspace`'s stream and buffers (the GPU variants; `opencv` ignores it).
/// The result is the same as without a workspace, bit for bit.
[[nodiscard]] ConvolveResult convolve(const cv::Mat& src, const Filter& filter, const ConvolveOptions& options,
                                      GpuWorkspace& workspace);

/// convolve() writing into the caller's host image `dst` instead of a new one: the GPU path
/// downloads into it and OpenCV filters into it, so a caller's buffer (a NumPy array, a mapped
/// file, a view into a larger image) receives the pixels with no copy of a result. `dst` has
/// `src`'s width, height and channels and the output depth (resolve_output_depth), any row step,
/// and is never reallocated. It may overlap `src` (in place, as cv::filter2D allows): the input is
/// then copied first. A refused request (Error usage or bad_input) writes nothing to `dst`. The
/// result's `image` is `dst`.
ConvolveResult convolve_into(const cv::Mat& src, const cv::Mat& dst, const Filter& filter,
                             const ConvolveOptions& options, GpuWorkspace& workspace);

/// Page-locked host memory (cudaMallocHost) on the current device's context. convolve_into()
/// moves a `src` or `dst` that lies in such memory over the link directly, with no copy through
/// the workspace's staging buffers (a NumPy output made in it, as the Python package makes them,
/// saves the host copy of every result). Move-only; freed when destroyed. Throws Error{gpu} when
/// the driver cannot give the memory.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(std::size_t bytes);
  ~PinnedHostBuffer();
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A device image (on the current device) holding `src` (8U, 16U, 16S or 32F; any channel count
/// up to 4); waits for the copy. Throws cuconv::Error{gpu} on a CUDA failure.
[[nodiscard]] DeviceImage upload(const cv::Mat& src);
/// `src` as a host image; waits for the copy and for all work queued on the device before it.
[[nodiscard]] cv::Mat download(ConstDeviceImageView src);

/// Filters the device image `src` into the device image `dst` with a GPU variant (`automatic`
/// picks one as for a host image), queued on `stream` with no host round trip and no wait: the
/// caller orders its later work on `stream`. `dst` has `src`'s width, height and channels and the
/// output depth resolve_output_depth gives; both live on the current device (options.device, if
/// set, becomes current). `workspace` keeps the filter's weights on the device between calls, on
/// any stream (a changed filter is stored in stream order after the last reads of the one before);
/// the PMPP variants' channel planes come from the device's stream-ordered pool and return to it
/// in order after the launches, so nothing here waits for the stream, and one workspace serves
/// one thread's calls on any number of streams. Exceptions: the first launch of a kernel in the
/// process may wait while CUDA loads it (lazy loading), and `fft` on an image size or filter whose
/// cuFFT plan or filter spectrum its thread has not kept allocates one and may free the oldest,
/// which may wait. Strips, --bench and the fallback to OpenCV are host-image features:
/// options.bench_runs must be 0.
/// Returns the variant queued. Throws cuconv::Error (usage: mismatched images, `opencv`; gpu: a
/// CUDA failure). The cv::Mat overloads above are built on the same device path.
Variant convolve(ConstDeviceImageView src, DeviceImageView dst, const Filter& filter, const ConvolveOptions& options,
                 GpuWorkspace& workspace, StreamHandle stream);

}  // namespace cuconv
