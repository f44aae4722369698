// SPDX-License-Identifier: Apache-2.0
// cuconv._cuconv: the extension module under the Python package (python/cuconv/__init__.py holds
// the cv2-style API). It binds the public library only: convolve() on host images (NumPy) and on
// device images (CUDA arrays through DLPack), the filter parsers and the device queries. Array
// layout checks that need Python (shapes, framework allocation) are the package's; this layer
// wraps the caller's memory without copies, releases the GIL while the engine works and turns
// cuconv::Error into Python exceptions.
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/version.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <opencv2/core.hpp>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace {

PyObject* g_error_type = nullptr;  // cuconv.Error, made at import

/// The OpenCV depth of an array's element type; -1 for types the engine has no use for.
int cv_depth(const nb::dlpack::dtype& t) {
  if (t == nb::dtype<std::uint8_t>()) return CV_8U;
  if (t == nb::dtype<std::uint16_t>()) return CV_16U;
  if (t == nb::dtype<std::int16_t>()) return CV_16S;
  if (t == nb::dtype<float>()) return CV_32F;
  if (t == nb::dtype<double>()) return CV_64F;
  return -1;
}

/// `cv::filter2D`'s ddepth (-1: the input's) as the library's Depth.
cuconv::Depth depth_from_ddepth(int ddepth) {
  switch (ddepth) {
    case -1:
      return cuconv::Depth::same;
    case CV_8U:
      return cuconv::Depth::u8;
    case CV_16U:
      return cuconv::Depth::u16;
    case CV_16S:
      return cuconv::Depth::s16;
    case CV_32F:
      return cuconv::Depth::f32;
    default:
      throw cuconv::Error(cuconv::ErrorKind::usage,
                          "ddepth " + std::to_string(ddepth) +
                              " is not available (cuconv writes CV_8U, CV_16U, CV_16S or CV_32F; -1: the input's)");
  }
}

/// What a Python call sets, as the library's options.
cuconv::ConvolveOptions make_options(const std::string& variant, const std::string& border, double border_value,
                                     int anchor_x, int anchor_y, double delta, int ddepth) {
  cuconv::ConvolveOptions o;
  const auto v = cuconv::parse_variant(variant);
  if (!v) {
    std::string names;
    for (const auto& entry : cuconv::kVariantList) names += (names.empty() ? "" : ", ") + std::string(entry.name);
    throw cuconv::Error(cuconv::ErrorKind::usage, "unknown variant '" + variant + "' (one of: " + names + ")");
  }
  const auto b = cuconv::parse_border(border);
  if (!b)
    throw cuconv::Error(cuconv::ErrorKind::usage,
                        "unknown border '" + border + "' (one of: reflect101, reflect, replicate, constant, wrap)");
  o.variant = *v;
  o.border = *b;
  o.border_value = border_value;
  o.anchor_x = anchor_x;
  o.anchor_y = anchor_y;
  o.delta = delta;
  o.depth = depth_from_ddepth(ddepth);
  o.parallel_host_copies = true;  // a Python caller's thread waits for the call: its cores are free
  return o;
}

/// A Filter from a 2-D float64 C-contiguous kernel, refused as the parsers refuse a filter file's
/// weights: over kMaxFilterSide on a side, or a weight that is not a finite float.
cuconv::Filter filter_from_kernel(nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu> kernel) {
  const auto height = kernel.shape(0), width = kernel.shape(1);
  if (width == 0 || height == 0) throw cuconv::Error(cuconv::ErrorKind::usage, "kernel is empty");
  if (width > cuconv::kMaxFilterSide || height > cuconv::kMaxFilterSide)
    throw cuconv::Error(cuconv::ErrorKind::usage, "kernel is " + std::to_string(width) + "x" + std::to_string(height) +
                                                      ", the maximum side is " +
                                                      std::to_string(cuconv::kMaxFilterSide));
  cuconv::Filter filter;
  filter.width = static_cast<int>(width);
  filter.height = static_cast<int>(height);
  filter.origin = "kernel";
  filter.weights.assign(kernel.data(), kernel.data() + width * height);
  for (std::size_t i = 0; i < filter.weights.size(); ++i) {
    const double w = filter.weights[i];
    if (std::isfinite(w) && std::abs(w) <= static_cast<double>(std::numeric_limits<float>::max())) continue;
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", w);
    throw cuconv::Error(cuconv::ErrorKind::usage,
                        "kernel weight " + std::string(text) + " at row " + std::to_string(i / width) + ", column " +
                            std::to_string(i % width) +
                            " is not a finite float (the kernels compute in float: every weight must be finite "
                            "and within +-3.4e38)");
  }
  return filter;
}

/// An (H, W, C) array whose pixels are contiguous and whose rows do not overlap (rows may be
/// further apart): cv::Mat's layout.
template <class Array>
void check_pixel_layout(const Array& a, const char* what) {
  if (a.ndim() != 3 || (a.shape(2) != 1 && a.stride(2) != 1) || a.stride(1) != static_cast<std::int64_t>(a.shape(2)) ||
      a.stride(0) < static_cast<std::int64_t>(a.shape(1) * a.shape(2)))
    throw nb::type_error((std::string(what) + ": expected an (H, W, C) array with contiguous pixels").c_str());
}

/// One workspace per thread and device (-1: the current one; the host path's): a workspace is
/// never shared by two threads, and one serves a thread's device calls on any stream (the
/// engine orders its kept weights between streams on the device).
cuconv::GpuWorkspace& thread_workspace(int device) {
  thread_local std::map<int, cuconv::GpuWorkspace> workspaces;
  return workspaces[device];
}

/// Filters the host image `src` into `dst` (both (H, W, C), C-contiguous pixels) with
/// cuconv::convolve_into: the engine writes `dst` itself, and nothing when it refuses the request.
/// Returns (variant used, why no GPU when `auto` filtered on the CPU for want of one, the GPU
/// failure `auto` fell back from).
nb::tuple convolve_host(nb::ndarray<nb::ro, nb::device::cpu> src, nb::ndarray<nb::device::cpu> dst,
                        const cuconv::Filter& filter, const std::string& variant, const std::string& border,
                        double border_value, int anchor_x, int anchor_y, double delta, int ddepth) {
  check_pixel_layout(src, "src");
  check_pixel_layout(dst, "dst");
  const cuconv::ConvolveOptions options =
      make_options(variant, border, border_value, anchor_x, anchor_y, delta, ddepth);
  const int in_depth = cv_depth(src.dtype()), out_depth = cv_depth(dst.dtype());
  const int channels = static_cast<int>(src.shape(2));
  if (in_depth < 0 || in_depth == CV_64F)
    throw nb::type_error("src: unsupported dtype (supported: uint8, uint16, float32)");
  if (out_depth < 0 || out_depth == CV_64F)
    throw nb::type_error("dst: unsupported dtype (supported: uint8, uint16, int16, float32)");
  if (dst.shape(0) != src.shape(0) || dst.shape(1) != src.shape(1) || dst.shape(2) != src.shape(2))
    throw nb::value_error("dst must have src's shape");
  const int rows = static_cast<int>(src.shape(0)), cols = static_cast<int>(src.shape(1));
  const cv::Mat in(rows, cols, CV_MAKETYPE(in_depth, channels), const_cast<void*>(src.data()),
                   static_cast<std::size_t>(src.stride(0)) * src.itemsize());
  const cv::Mat out(rows, cols, CV_MAKETYPE(out_depth, channels), dst.data(),
                    static_cast<std::size_t>(dst.stride(0)) * dst.itemsize());
  std::string no_gpu_reason;
  std::string variant_used;
  std::string fallback;
  {
    nb::gil_scoped_release release;
    cuconv::ConvolveResult result = cuconv::convolve_into(in, out, filter, options, thread_workspace(-1));
    variant_used = std::string(cuconv::to_string(result.variant_used));
    fallback = std::move(result.fallback_reason);
    const bool auto_on_cpu = options.variant == cuconv::Variant::automatic &&
                             result.variant_used == cuconv::Variant::opencv && fallback.empty();
    if (!auto_on_cpu || cuconv::cuda_device_available(&no_gpu_reason)) no_gpu_reason.clear();
  }
  return nb::make_tuple(variant_used, no_gpu_reason, fallback);
}

/// Filters the device image at `src` into the one at `dst` (CUDA memory on `device`, -1: the
/// current one; `height` rows of `width` packed pixels of `channels` values, rows `*_pitch` bytes
/// apart; element types as NumPy type characters), queued on `stream` (a cudaStream_t as an
/// integer; 0: the legacy default stream), no wait. The package reads these from the arrays'
/// __cuda_array_interface__ or DLPack (dlpack_array). Returns the variant queued.
std::string convolve_device(std::uintptr_t src, std::size_t src_pitch, std::uintptr_t dst, std::size_t dst_pitch,
                            int height, int width, int channels, int in_depth, int out_depth, int device,
                            const cuconv::Filter& filter, const std::string& variant, const std::string& border,
                            double border_value, int anchor_x, int anchor_y, double delta, int ddepth,
                            std::uintptr_t stream) {
  cuconv::ConvolveOptions options = make_options(variant, border, border_value, anchor_x, anchor_y, delta, ddepth);
  options.device = device;
  const cuconv::ConstDeviceImageView in{
      reinterpret_cast<const std::byte*>(src), src_pitch, width, height, channels, in_depth};
  const cuconv::DeviceImageView out{reinterpret_cast<std::byte*>(dst), dst_pitch, width, height, channels, out_depth};
  nb::gil_scoped_release release;
  const cuconv::Variant used = cuconv::convolve(in, out, filter, options, thread_workspace(device),
                                                reinterpret_cast<cuconv::StreamHandle>(stream));
  return std::string(cuconv::to_string(used));
}

// ---- One PyTorch CUDA tensor in one call --------------------------------------------------------
// The package's general path (python/cuconv/__init__.py, _filter) reads an array through Python
// code: about 20 us a call, more than a 64x64 image's filter and synchronisation together.
// filter_tensor does the same for the common case, an exact torch.Tensor image on a CUDA device on
// the current stream, through PyTorch's C-implemented attributes; anything else (another array,
// a batch, a view it would have to copy, a value to convert or refuse) goes to the general path,
// which gives the same results and the errors.

/// PyTorch's objects the fast path compares with and calls: looked up when torch is first seen
/// imported, held for the process (never released: the module may outlive torch's teardown).
struct TorchObjects {
  PyObject* tensor_type = nullptr;
  PyObject* dtypes[4] = {};        // uint8, uint16, int16, float32: CV_8U, CV_16U, CV_16S, CV_32F
  PyObject* raw_stream = nullptr;  // torch._C._cuda_getCurrentRawStream(device)
};

constexpr int kTensorDepths[4] = {CV_8U, CV_16U, CV_16S, CV_32F};

/// PyTorch's objects once torch is imported; nullptr before (no tensor can exist then).
const TorchObjects* torch_objects() {
  static TorchObjects torch;
  if (torch.tensor_type != nullptr) return &torch;
  // sys.modules, asked every call (no function-local static: a thread waiting for another's
  // initialisation while it holds the GIL would never let the initialising thread finish).
  PyObject* const modules = PySys_GetObject("modules");  // borrowed
  if (modules == nullptr) return nullptr;
  const nb::dict loaded = nb::borrow<nb::dict>(modules);
  if (!loaded.contains("torch")) return nullptr;
  nb::object module = loaded["torch"];
  nb::object raw_stream = nb::getattr(module.attr("_C"), "_cuda_getCurrentRawStream", nb::none());
  if (raw_stream.is_none()) return nullptr;  // a PyTorch without CUDA: the general path
  const char* names[4] = {"uint8", "uint16", "int16", "float32"};
  for (int i = 0; i < 4; ++i) {
    nb::object dtype = nb::getattr(module, names[i], nb::none());
    if (dtype.is_none()) return nullptr;  // before torch.uint16 (2.3): the general path
    torch.dtypes[i] = dtype.release().ptr();
  }
  torch.raw_stream = raw_stream.release().ptr();
  torch.tensor_type = nb::object(module.attr("Tensor")).release().ptr();
  return &torch;
}

/// What the fast path reads of a tensor: pointer, (H, W, C), row pitch in bytes, depth, device.
struct TensorImage {
  std::uintptr_t ptr = 0;
  std::int64_t height = 0, width = 0, channels = 0;
  std::int64_t row_stride = 0;  // elements
  int depth = -1;
  int device = -1;
  nb::object shape;
};

/// `h` read as one (H, W) or (H, W, C) image of packed pixels on a CUDA device, or false for
/// anything the general path must see (another type, a subclass, a batch, 2 or 5 channels, a
/// column or channel stride, an element type the engine does not take).
bool read_tensor(const TorchObjects& torch, nb::handle h, TensorImage& image) {
  if (Py_TYPE(h.ptr()) != reinterpret_cast<PyTypeObject*>(torch.tensor_type)) return false;
  if (!h.attr("is_cuda").is(nb::handle(Py_True))) return false;
  const nb::object dtype = h.attr("dtype");
  for (int i = 0; i < 4; ++i)
    if (dtype.is(nb::handle(torch.dtypes[i]))) image.depth = kTensorDepths[i];
  if (image.depth < 0) return false;
  image.shape = h.attr("shape");
  const nb::tuple shape = nb::borrow<nb::tuple>(image.shape);
  const nb::tuple strides = nb::borrow<nb::tuple>(h.attr("stride")());
  const std::size_t ndim = nb::len(shape);
  if (ndim != 2 && ndim != 3) return false;
  image.height = nb::cast<std::int64_t>(shape[0]);
  image.width = nb::cast<std::int64_t>(shape[1]);
  image.channels = ndim == 3 ? nb::cast<std::int64_t>(shape[2]) : 1;
  if (image.height <= 0 || image.width <= 0 || image.height > std::numeric_limits<int>::max() ||
      image.width > std::numeric_limits<int>::max())
    return false;
  if (image.channels != 1 && image.channels != 3 && image.channels != 4) return false;
  const std::int64_t pixel_stride = nb::cast<std::int64_t>(strides[1]);
  if (ndim == 3 && image.channels != 1 && nb::cast<std::int64_t>(strides[2]) != 1) return false;
  image.row_stride = nb::cast<std::int64_t>(strides[0]);
  if (pixel_stride != image.channels || image.row_stride < image.width * image.channels) return false;
  image.ptr = nb::cast<std::uintptr_t>(h.attr("data_ptr")());
  image.device = nb::cast<int>(h.attr("get_device")());
  return true;
}

/// A Python int (not a bool, not another number type) as `value`; false for anything else.
bool exact_int(nb::handle h, long long& value) {
  if (Py_TYPE(h.ptr()) != &PyLong_Type) return false;
  value = PyLong_AsLongLong(h.ptr());
  if (value == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

/// A number Python's float() takes at once (float or int), or false.
bool plain_float(nb::handle h, double& value) {
  if (Py_TYPE(h.ptr()) == &PyFloat_Type) {
    value = PyFloat_AsDouble(h.ptr());
    return true;
  }
  long long integer = 0;
  if (!exact_int(h, integer)) return false;
  value = static_cast<double>(integer);
  return true;
}

/// cuconv.filter2D's and cuconv.convolve's call on one PyTorch CUDA tensor image, queued on
/// PyTorch's current stream with no wait, into `dst` or a new tensor; returns the output, or None
/// where the general path must take the call (nothing queued, nothing allocated then). `ddepth`:
/// None or cv2's value; `border`: cv2's constant; `anchor`: (x, y) ints.
nb::object filter_tensor(nb::handle src, nb::handle ddepth, const cuconv::Filter& filter, nb::handle dst,
                         nb::handle anchor, nb::handle delta, nb::handle border, nb::handle border_value,
                         nb::handle variant) {
  const TorchObjects* torch = torch_objects();
  TensorImage in;
  if (torch == nullptr || !read_tensor(*torch, src, in) || in.depth == CV_16S) return nb::none();  // 16S: out only
  long long depth_code = -1;
  if (!ddepth.is_none() && !exact_int(ddepth, depth_code)) return nb::none();
  int out_index = -1;  // in TorchObjects::dtypes
  for (int i = 0; i < 4; ++i)
    if (kTensorDepths[i] == (depth_code < 0 ? in.depth : depth_code)) out_index = i;
  if (out_index < 0) return nb::none();  // a ddepth cuconv does not write: the general path says so
  // cv2's border constants, with BORDER_ISOLATED (16) accepted and ignored.
  static const char* const kBorderNames[5] = {"constant", "replicate", "reflect", "wrap", "reflect101"};
  long long border_code = 0;
  if (!exact_int(border, border_code)) return nb::none();
  border_code &= ~16LL;
  if (border_code < 0 || border_code > 4) return nb::none();
  const std::string border_name = kBorderNames[border_code];
  long long anchor_x = -1, anchor_y = -1;
  if (!nb::isinstance<nb::tuple>(anchor) || nb::len(anchor) != 2 || !exact_int(anchor[0], anchor_x) ||
      !exact_int(anchor[1], anchor_y) || anchor_x < INT_MIN || anchor_x > INT_MAX || anchor_y < INT_MIN ||
      anchor_y > INT_MAX)
    return nb::none();
  double delta_value = 0, border_value_value = 0;
  if (!plain_float(delta, delta_value) || !plain_float(border_value, border_value_value) ||
      !nb::isinstance<nb::str>(variant))
    return nb::none();

  nb::object output;
  TensorImage out;
  if (dst.is_none()) {
    // No keyword when the dtype stays: a call without one costs PyTorch less. Tensor.new_empty
    // (src is exactly a torch.Tensor) makes a new packed tensor of that shape on src's device, so
    // only its address is read back.
    output = kTensorDepths[out_index] == in.depth
                 ? src.attr("new_empty")(in.shape)
                 : src.attr("new_empty")(in.shape, nb::arg("dtype") = nb::handle(torch->dtypes[out_index]));
    out = in;
    out.depth = kTensorDepths[out_index];
    out.row_stride = in.width * in.channels;
    out.ptr = nb::cast<std::uintptr_t>(output.attr("data_ptr")());
  } else {
    output = nb::borrow(dst);
    if (!read_tensor(*torch, output, out) || out.depth != kTensorDepths[out_index] || out.device != in.device ||
        !in.shape.equal(out.shape))
      return nb::none();
    // In place, or overlapping views: the general path reads from a copy.
    const auto span_end = [](const TensorImage& t) {
      return t.ptr + static_cast<std::uintptr_t>(((t.height - 1) * t.row_stride + t.width * t.channels) *
                                                 static_cast<std::int64_t>(cuconv::depth_bytes(t.depth)));
    };
    if (in.ptr < span_end(out) && out.ptr < span_end(in)) return nb::none();
  }

  const std::uintptr_t stream = nb::cast<std::uintptr_t>(nb::handle(torch->raw_stream)(in.device));
  const std::int64_t in_item = static_cast<std::int64_t>(cuconv::depth_bytes(in.depth));
  const std::int64_t out_item = static_cast<std::int64_t>(cuconv::depth_bytes(out.depth));
  static_cast<void>(convolve_device(
      in.ptr, static_cast<std::size_t>(in.row_stride * in_item), out.ptr,
      static_cast<std::size_t>(out.row_stride * out_item), static_cast<int>(in.height), static_cast<int>(in.width),
      static_cast<int>(in.channels), in.depth, out.depth, in.device, filter, nb::cast<std::string>(variant),
      border_name, border_value_value, static_cast<int>(anchor_x), static_cast<int>(anchor_y), delta_value,
      depth_code < 0 || depth_code == in.depth ? -1 : static_cast<int>(depth_code), stream));
  return output;
}

/// (pointer, shape, strides in elements, DLPack type code, bits, device) of a CUDA array that
/// speaks DLPack only; the caller keeps the array alive.
nb::tuple dlpack_array(nb::ndarray<nb::device::cuda> a) {
  std::vector<std::int64_t> shape, strides;
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    shape.push_back(static_cast<std::int64_t>(a.shape(i)));
    strides.push_back(a.stride(i));
  }
  return nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), shape, strides, a.dtype().code, a.dtype().bits,
                        a.device_id());
}

// ---- NumPy outputs in page-locked memory -------------------------------------------------------
// A GPU call's NumPy output made in page-locked memory takes the download straight from the link
// (convolve_into), with no copy through the workspace's staging buffers: a 512x512 float image
// saves a 1 MiB host copy. cudaMallocHost costs far more than such a call, so freed blocks are kept
// by size and a loop over equal images allocates once. At most kPinnedKeptBytes of free blocks are
// kept and kPinnedLiveBytes handed out; past that (a caller keeping thousands of results), for
// blocks over kPinnedLargest and where the driver refuses, outputs are ordinary NumPy memory.

constexpr std::size_t kPinnedKeptBytes = std::size_t{256} << 20;
constexpr std::size_t kPinnedLiveBytes = std::size_t{1} << 30;
constexpr std::size_t kPinnedLargest = std::size_t{64} << 20;

class PinnedOutputs {
 public:
  /// A block of exactly `bytes`, kept or new; an empty one when the limits or the driver say no.
  cuconv::PinnedHostBuffer take(std::size_t bytes) {
    {
      const std::lock_guard lock(mutex_);
      if (bytes > kPinnedLargest || live_ + bytes > kPinnedLiveBytes) return {};
      live_ += bytes;
      if (const auto kept = free_.find(bytes); kept != free_.end()) {
        cuconv::PinnedHostBuffer block = std::move(kept->second);
        free_.erase(kept);
        kept_ -= bytes;
        return block;
      }
    }
    try {
      return cuconv::PinnedHostBuffer(bytes);  // outside the lock: it may take milliseconds
    } catch (const cuconv::Error&) {
      const std::lock_guard lock(mutex_);
      live_ -= bytes;
      return {};
    }
  }
  /// A block its array no longer uses: kept for the next output of its size, or freed.
  void give(cuconv::PinnedHostBuffer block) {
    cuconv::PinnedHostBuffer dropped;
    const std::lock_guard lock(mutex_);
    live_ -= block.size();
    if (kept_ + block.size() > kPinnedKeptBytes) {
      dropped = std::move(block);  // freed after the lock is released
      return;
    }
    kept_ += block.size();
    free_.emplace(block.size(), std::move(block));
  }
  /// (bytes handed out, bytes kept free), for the tests.
  std::pair<std::size_t, std::size_t> bytes() {
    const std::lock_guard lock(mutex_);
    return {live_, kept_};
  }

 private:
  std::mutex mutex_;
  std::multimap<std::size_t, cuconv::PinnedHostBuffer> free_;
  std::size_t kept_ = 0;
  std::size_t live_ = 0;
};

/// The process's blocks: never destroyed (arrays may outlive the module; the driver frees
/// page-locked memory with the process).
PinnedOutputs& pinned_outputs() {
  static auto* const outputs = new PinnedOutputs;
  return *outputs;
}

/// A 1-D uint8 NumPy array of `bytes` in page-locked memory, whose block goes back to the kept
/// ones when the array (and every view of it) is gone; None when none can be had.
nb::object pinned_output(std::size_t bytes) {
  cuconv::PinnedHostBuffer block = pinned_outputs().take(bytes);
  if (block.data() == nullptr) return nb::none();
  auto* owned = new cuconv::PinnedHostBuffer(std::move(block));
  nb::capsule owner(owned, [](void* p) noexcept {
    auto* buffer = static_cast<cuconv::PinnedHostBuffer*>(p);
    pinned_outputs().give(std::move(*buffer));
    delete buffer;
  });
  const std::size_t shape[1] = {bytes};
  return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(owned->data(), 1, shape, owner).cast();
}

/// (available, reason): whether a CUDA device can be used, and why not.
std::pair<bool, std::string> device_available() {
  std::string reason;
  const bool ok = cuconv::cuda_device_available(&reason);
  return {ok, reason};
}

/// Device memory the calling thread's workspaces hold, in bytes (the memory-growth test).
std::uint64_t thread_workspace_bytes() {
  std::uint64_t total = 0;
  for (int device = -1; device < cuconv::cuda_device_count(); ++device)
    total += thread_workspace(device).device_bytes();
  return total;
}

}  // namespace

NB_MODULE(_cuconv, m) {
  m.doc() = "cuconv's extension module; use the cuconv package (docs/python.md).";
  g_error_type = PyErr_NewExceptionWithDoc("cuconv.Error",
                                           "A failure of the engine that is not a bad argument: a CUDA failure, "
                                           "a GPU variant without a device, an internal error.",
                                           PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(g_error_type);
  // Bad arguments and inputs are ValueErrors; the rest cuconv.Error; std::bad_alloc is nanobind's
  // MemoryError. Messages are the engine's, as the CLI prints them.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cuconv::Error& e) {
      const bool argument = e.kind() == cuconv::ErrorKind::usage || e.kind() == cuconv::ErrorKind::bad_input;
      const bool memory =
          e.kind() == cuconv::ErrorKind::bad_input && std::string_view(e.what()).starts_with("not enough memory");
      PyErr_SetString(memory ? PyExc_MemoryError : argument ? PyExc_ValueError : g_error_type, e.what());
    } catch (const cv::Exception& e) {
      PyErr_SetString(g_error_type, e.what());
    }
  });

  nb::class_<cuconv::Filter>(m, "Filter", "A parsed filter: weights (row-major, float64), size, anchor, offset.")
      .def_ro("width", &cuconv::Filter::width)
      .def_ro("height", &cuconv::Filter::height)
      .def_ro("anchor_x", &cuconv::Filter::anchor_x)
      .def_ro("anchor_y", &cuconv::Filter::anchor_y)
      .def_ro("offset", &cuconv::Filter::offset)
      .def_ro("origin", &cuconv::Filter::origin)
      .def_prop_ro("weights", [](const cuconv::Filter& f) { return f.weights; })
      .def("__repr__", [](const cuconv::Filter& f) { return cuconv::describe_filter(f); });

  m.def(
      "load_filter",
      [](const std::string& spec, bool normalize) {
        cuconv::FilterLoadOptions options;
        options.normalize = normalize;
        return cuconv::load_filter(spec, options);
      },
      nb::arg("spec"), nb::arg("normalize") = false,
      "A filter as the CLI's --filter takes it: preset, parametric, inline or file path.");
  m.def("filter_from_kernel", &filter_from_kernel, nb::arg("kernel"), "A filter from a 2-D float64 array.");
  m.def("preset_names", &cuconv::preset_names, "Names of the embedded presets, sorted.");
  m.def(
      "gpu_variant_names",
      [] {
        std::vector<std::string> names;
        for (const auto& entry : cuconv::kVariantList)
          if (entry.gpu) names.emplace_back(entry.name);
        return names;
      },
      "The GPU variants' names, as `variant=` takes them.");
  m.def("convolve_host", &convolve_host, nb::arg("src"), nb::arg("dst"), nb::arg("filter"), nb::arg("variant"),
        nb::arg("border"), nb::arg("border_value"), nb::arg("anchor_x"), nb::arg("anchor_y"), nb::arg("delta"),
        nb::arg("ddepth"), "Filters the host image src (H, W, C) into dst; (variant used, no-GPU reason, fallback).");
  m.def("convolve_device", &convolve_device, nb::arg("src"), nb::arg("src_pitch"), nb::arg("dst"), nb::arg("dst_pitch"),
        nb::arg("height"), nb::arg("width"), nb::arg("channels"), nb::arg("in_depth"), nb::arg("out_depth"),
        nb::arg("device"), nb::arg("filter"), nb::arg("variant"), nb::arg("border"), nb::arg("border_value"),
        nb::arg("anchor_x"), nb::arg("anchor_y"), nb::arg("delta"), nb::arg("ddepth"), nb::arg("stream"),
        "Queues the filter of a device image on stream; returns the variant queued.");
  m.def("filter_tensor", &filter_tensor, nb::arg("src").none(), nb::arg("ddepth").none(), nb::arg("filter"),
        nb::arg("dst").none(), nb::arg("anchor").none(), nb::arg("delta").none(), nb::arg("border").none(),
        nb::arg("border_value").none(), nb::arg("variant").none(),
        "One PyTorch CUDA tensor image filtered on the current stream; None: the call needs the general path.");
  m.def("pinned_output", &pinned_output, nb::arg("nbytes"),
        "A uint8 NumPy array of nbytes in page-locked memory (kept for reuse when freed), or None.");
  m.def(
      "pinned_output_bytes", [] { return pinned_outputs().bytes(); },
      "(bytes of page-locked outputs in use, bytes kept free for reuse).");
  m.def("dlpack_array", &dlpack_array, nb::arg("array"),
        "(pointer, shape, strides in elements, DLPack type code, bits, device) of a DLPack CUDA array.");
  m.def("device_available", &device_available, "(whether a CUDA device can be used, why not).");
  m.def("cuda_device_count", &cuconv::cuda_device_count, "Usable CUDA devices.");
  m.def("thread_workspace_bytes", &thread_workspace_bytes, "Device memory the calling thread's workspaces hold.");
  m.attr("__version__") = CUCONV_VERSION;
  m.attr("opencv_version") = CV_VERSION;  // the OpenCV the engine links (its CPU path and reference)
}
