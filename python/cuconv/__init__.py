# SPDX-License-Identifier: Apache-2.0
"""cuconv: cv2.filter2D's semantics on the GPU, through the same engine as the ``cuconv`` CLI.

NumPy arrays in give NumPy arrays out (uploaded, filtered, downloaded); CUDA arrays (PyTorch,
CuPy, anything with ``__cuda_array_interface__`` or DLPack) are filtered where they are, without
copies, on the caller's stream. Without a CUDA device the CPU filters (OpenCV, as the CLI does),
with the CLI's warning once per process. docs/python.md has the guide and the cv2 mapping.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np

from . import _arrays, _cuconv
from ._cuconv import Error, Filter

__version__ = _cuconv.__version__
__all__ = [
    "Error", "Filter", "filter2D", "sepFilter2D", "GaussianBlur", "boxFilter", "blur", "Sobel", "Laplacian",
    "convolve", "load_filter", "preset_names", "device_available", "getGaussianKernel", "getDerivKernels",
]

# cv2's constants, with cv2's integer values.
CV_8U, CV_16U, CV_16S, CV_32F = 0, 2, 3, 5
BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT, BORDER_WRAP, BORDER_REFLECT_101 = 0, 1, 2, 3, 4
BORDER_REFLECT101 = BORDER_DEFAULT = BORDER_REFLECT_101
BORDER_ISOLATED = 16  # accepted and ignored: an array here is never a view into a larger cv::Mat

_BORDER_NAMES = {BORDER_CONSTANT: "constant", BORDER_REPLICATE: "replicate", BORDER_REFLECT: "reflect",
                 BORDER_WRAP: "wrap", BORDER_REFLECT_101: "reflect101"}
_BORDER_CODES = {name: code for code, name in _BORDER_NAMES.items()}
_warned_lock = threading.Lock()
_warned = False


def device_available() -> tuple[bool, str]:
    """(whether a CUDA device can be used, why not)."""
    return _cuconv.device_available()


def preset_names() -> list[str]:
    """The embedded presets' names (``cuconv --list-filters``)."""
    return _cuconv.preset_names()


def load_filter(spec: str, normalize: bool = False) -> Filter:
    """A filter as the CLI's ``--filter`` takes it: a preset (``gauss5``), a parametric filter
    (``gaussian:3,1.2``, ``box:5``), an inline one (``3x3:0,1,0,1,-4,1,0,1,0``) or a file path;
    ``normalize`` divides the weights by their sum (``--normalize``)."""
    return _cuconv.load_filter(str(spec), normalize)


# Filters made from kernel arrays, by the array's dtype, shape and bytes: a loop that passes the
# same kernel every call parses and checks it once. Filters are immutable; the oldest goes first.
_KERNEL_FILTERS_KEPT = 64
_kernel_filters: dict = {}
_kernel_filters_lock = threading.Lock()


def _kernel_filter(kernel) -> Filter:
    kernel = np.asarray(kernel)
    if kernel.dtype.kind not in "biuf":
        raise TypeError(f"kernel: expected a numeric array, got dtype {kernel.dtype}")
    key = (kernel.dtype.str, kernel.shape, kernel.tobytes())
    filt = _kernel_filters.get(key)
    if filt is not None:
        return filt
    if kernel.ndim == 1:
        kernel = kernel[:, None]  # cv2 reads a 1-D array as a column
    if kernel.ndim != 2:
        raise ValueError(f"kernel: expected a 2-D array, got shape {kernel.shape}")
    filt = _cuconv.filter_from_kernel(np.ascontiguousarray(kernel, dtype=np.float64))
    with _kernel_filters_lock:
        if len(_kernel_filters) >= _KERNEL_FILTERS_KEPT:
            del _kernel_filters[next(iter(_kernel_filters))]
        _kernel_filters[key] = filt
    return filt


def _border_name(border_type: int) -> str:
    name = _BORDER_NAMES.get(int(border_type) & ~BORDER_ISOLATED)
    if name is None:
        raise ValueError(f"borderType {border_type} is not available (BORDER_CONSTANT, BORDER_REPLICATE, "
                         "BORDER_REFLECT, BORDER_WRAP, BORDER_REFLECT_101)")
    return name


def _output_dtype(src_dtype: np.dtype, ddepth: int) -> np.dtype:
    if ddepth is None or ddepth < 0:
        return src_dtype
    if ddepth not in _arrays.DTYPES:
        raise ValueError(f"ddepth {ddepth} is not available (cuconv writes CV_8U, CV_16U, CV_16S or CV_32F; "
                         "-1: the input's)")
    return _arrays.DTYPES[ddepth]


def _warn_no_gpu(reason: str) -> None:
    """The CLI's no-GPU warning, once per process (CUCONV_NO_GPU_WARNING=1 silences it, as it does the CLI's)."""
    global _warned
    import os
    with _warned_lock:
        if _warned or os.environ.get("CUCONV_NO_GPU_WARNING") == "1":
            return
        _warned = True
    # The CLI's words (src/cli/warnings.cpp, no_gpu_warning): the reason up to its ';' (what follows
    # is advice); a test compares the two.
    why = reason.split(";")[0]
    warnings.warn(f"no GPU ({why}), CPU used; CUCONV_NO_GPU_WARNING=1 hides this", RuntimeWarning, stacklevel=4)


def _check_out(out, shape: tuple, dtype: np.dtype, cuda: bool):
    """``out`` checked against the output's shape and dtype: its CudaArray for a CUDA call, the
    array itself for a host one."""
    target = _arrays.cuda_array(out, "dst")
    if cuda != (target is not None) or not (cuda or isinstance(out, np.ndarray)):
        raise TypeError(f"dst: expected a {'CUDA' if cuda else 'NumPy'} array like src, got {type(out).__name__}")
    out_shape, out_dtype = (target.shape, target.dtype) if cuda else (tuple(out.shape), out.dtype)
    if out_shape != shape or out_dtype != dtype:
        raise ValueError(f"dst: expected shape {shape} and dtype {dtype}, got {out_shape} and {out_dtype}")
    if not cuda and not out.flags.writeable:
        raise ValueError("dst: the array is read-only")
    return target if cuda else out


_gpu_present = None  # whether a CUDA device can be used, asked once (the CUDA runtime keeps its answer too)


def _host_output(shape: tuple, dtype: np.dtype, variant: str) -> np.ndarray:
    """A new NumPy output: in page-locked memory where the GPU will download into it (the engine
    then copies straight into it, with no staging copy), else ordinary memory."""
    global _gpu_present
    if _gpu_present is None:
        _gpu_present = _cuconv.device_available()[0]
    if variant != "opencv" and _gpu_present:
        nbytes = dtype.itemsize
        for n in shape:
            nbytes *= n
        block = _cuconv.pinned_output(nbytes)
        if block is not None:
            return block.view(dtype).reshape(shape)
    return np.empty(shape, dtype)


def _filter(src, filt: Filter, ddepth, dst, anchor, delta, border: str, border_value, variant: str, stream,
            batch):
    """The one path every function takes: validate everything, then filter image by image."""
    anchor_x, anchor_y = (int(a) for a in anchor)
    array = _arrays.cuda_array(src, "src")
    cuda = array is not None
    if not cuda and not isinstance(src, np.ndarray):
        raise TypeError(f"src: expected a NumPy array or a CUDA array (DLPack or __cuda_array_interface__), "
                        f"got {type(src).__name__}")
    shape, dtype = (array.shape, array.dtype) if cuda else (src.shape, src.dtype)
    dtype = _arrays.check_input_dtype(dtype)
    shape4 = _arrays.image_shape(shape, batch)
    batch_axis = len(shape) == 4 or bool(batch)
    out_dtype = _output_dtype(dtype, ddepth)
    out_depth = _arrays.DEPTHS[out_dtype]
    ddepth_code = -1 if out_dtype == dtype else out_depth
    target = _check_out(dst, tuple(shape), out_dtype, cuda) if dst is not None else None
    args = (filt, variant, border, float(border_value), anchor_x, anchor_y, float(delta), ddepth_code)
    if cuda:
        return _filter_cuda(array, shape4, batch_axis, out_dtype, target, args, stream)
    images = _arrays.host_images(src, shape4)
    out = dst if dst is not None else _host_output(shape, out_dtype, variant)
    outs = _arrays.host_images(out, shape4)
    for i in range(shape4[0]):
        target = outs[i]
        packed_target = target if _arrays.pixels_contiguous(target.strides, target.itemsize, shape4[3],
                                                            shape4[2]) else None
        result = packed_target if packed_target is not None else np.empty(target.shape, out_dtype)
        _, no_gpu_reason, gpu_failure = _cuconv.convolve_host(_arrays.packed_host_image(images[i]), result, *args)
        if no_gpu_reason:
            _warn_no_gpu(no_gpu_reason)
        if gpu_failure:  # `auto` kept the image after a GPU failure; the CLI warns the same way
            warnings.warn(f"{gpu_failure}; filtered with OpenCV on the CPU instead", RuntimeWarning, stacklevel=3)
        if packed_target is None:
            target[...] = result
    return out


def _filter_cuda(array, shape4, batch_axis, out_dtype, target, args, stream):
    """Queues the filter of each image of ``array`` into ``target`` (a CudaArray, or None for a new
    array of ``array``'s kind) on the caller's stream, and returns the output. Arrays made here
    (the output, packed copies) are made on that stream, and PyTorch is told that the caller's
    arrays are used there, so no memory is reused before the queued work is done."""
    current = _arrays.current_stream(array)
    handle = _arrays.stream_handle(stream, array, current)
    # Another stream than the framework's current one: allocate and copy on it, record the use.
    work_stream = _arrays.framework_stream(array, handle) if current is not None and handle != current else None
    src, src_images = array, array.images(shape4, batch_axis)
    if src_images is None:
        with _arrays.on_stream(work_stream):
            src = _arrays.CudaArray(_arrays.packed_cuda_copy(array.obj), "src")
    if target is None:
        with _arrays.on_stream(work_stream):
            target = _arrays.CudaArray(_arrays.empty_like_cuda(array, array.shape, out_dtype), "dst")
    if target.readonly:
        raise ValueError("dst: the array is read-only")
    if _arrays.overlap(src, target):  # in place, as cv2 allows: the kernels must not read what they write
        with _arrays.on_stream(work_stream):
            src = _arrays.CudaArray(_arrays.packed_cuda_copy(src.obj, "src and dst overlap"), "src")
    if src is not array:
        src_images = src.images(shape4, batch_axis)
    dst_images = target.images(shape4, batch_axis)
    if dst_images is None:
        raise ValueError("dst: the pixels are not packed (a channel or column stride); pass a packed array")
    n, h, w, c = shape4
    in_depth, out_depth = _arrays.DEPTHS[src.dtype], _arrays.DEPTHS[out_dtype]
    (src_ptr, src_pitch, src_step), (dst_ptr, dst_pitch, dst_step) = src_images, dst_images
    for i in range(n):
        _cuconv.convolve_device(src_ptr + i * src_step, src_pitch, dst_ptr + i * dst_step, dst_pitch, h, w, c,
                                in_depth, out_depth, src.device, *args, handle)
    _arrays.record_use(array.obj, work_stream)
    _arrays.record_use(target.obj, work_stream)
    return target.obj


def filter2D(src, ddepth: int, kernel, dst=None, anchor=(-1, -1), delta: float = 0, borderType: int = BORDER_DEFAULT,
             *, borderValue: float = 0, variant: str = "auto", stream=None):
    """cv2.filter2D: correlates ``src`` with ``kernel`` (not flipped), adds ``delta``, rounds half to
    even and saturates to ``ddepth`` (-1: the input's; CV_8U, CV_16U, CV_16S, CV_32F as cv2 allows).
    ``anchor`` (x, y), (-1, -1): the kernel's centre. ``borderType``: cv2's constants, plus
    BORDER_WRAP (cv2.filter2D refuses it). Extensions: ``borderValue`` (BORDER_CONSTANT's value,
    cv2's is 0), ``variant`` (the CLI's --variant), ``stream`` (CUDA arrays: the stream to queue on).
    Also takes batches (N, H, W, C) and CUDA arrays; returns ``dst`` (a new array when None)."""
    filt = _kernel_filter(kernel)
    if stream is None:  # one PyTorch CUDA tensor image on its current stream: the extension's own path
        out = _cuconv.filter_tensor(src, ddepth, filt, dst, anchor, delta, borderType, borderValue, variant)
        if out is not None:
            return out
    return _filter(src, filt, ddepth, dst, anchor, delta, _border_name(borderType), borderValue, variant, stream, None)


def sepFilter2D(src, ddepth: int, kernelX, kernelY, dst=None, anchor=(-1, -1), delta: float = 0,
                borderType: int = BORDER_DEFAULT, *, variant: str = "auto", stream=None):
    """cv2.sepFilter2D as filter2D with the kernel kernelY * kernelX^T (the engine finds the
    separable form again). cv2 rounds between its row and column passes; this sums once, so
    results may differ from cv2's by the documented pass rule (docs/python.md)."""
    kx = np.asarray(kernelX, dtype=np.float64).reshape(-1)
    ky = np.asarray(kernelY, dtype=np.float64).reshape(-1)
    return filter2D(src, ddepth, np.outer(ky, kx), dst, anchor, delta, borderType, variant=variant, stream=stream)


def getGaussianKernel(ksize: int, sigma: float) -> np.ndarray:
    """cv2.getGaussianKernel (float64, ksize x 1), with its fixed kernels for ksize <= 7, sigma <= 0."""
    fixed = {1: [1.0], 3: [0.25, 0.5, 0.25], 5: [0.0625, 0.25, 0.375, 0.25, 0.0625],
             7: [0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125]}
    if ksize % 2 == 1 and ksize in fixed and sigma <= 0:
        return np.array(fixed[ksize], dtype=np.float64).reshape(-1, 1)
    sigma = sigma if sigma > 0 else ((ksize - 1) * 0.5 - 1) * 0.3 + 0.8
    x = np.arange(ksize, dtype=np.float64) - (ksize - 1) * 0.5
    values = np.exp(-0.5 / (sigma * sigma) * x * x)
    return (values / values.sum()).reshape(-1, 1)


def GaussianBlur(src, ksize, sigmaX: float, dst=None, sigmaY: float = 0, borderType: int = BORDER_DEFAULT, *,
                 variant: str = "auto", stream=None):
    """cv2.GaussianBlur as filter2D with getGaussianKernel's kernels. cv2 filters 8-bit images in
    fixed point, so its 8-bit results may differ from this (the exact sum) by 1 (docs/python.md)."""
    kw, kh = (int(k) for k in ksize)
    sigma_y = sigmaY if sigmaY > 0 else sigmaX
    depth_factor = 3 if np.dtype(_source_dtype(src)) == np.uint8 else 4
    if kw <= 0 and sigmaX > 0:
        kw = int(np.rint(sigmaX * depth_factor * 2 + 1)) | 1
    if kh <= 0 and sigma_y > 0:
        kh = int(np.rint(sigma_y * depth_factor * 2 + 1)) | 1
    if kw <= 0 or kh <= 0 or kw % 2 == 0 or kh % 2 == 0:
        raise ValueError(f"GaussianBlur: ksize {tuple(ksize)} must be odd and positive (or 0 with a sigma)")
    return sepFilter2D(src, -1, getGaussianKernel(kw, sigmaX), getGaussianKernel(kh, sigma_y), dst, (-1, -1), 0,
                       borderType, variant=variant, stream=stream)


def _source_dtype(src):
    array = _arrays.cuda_array(src, "src")
    return array.dtype if array is not None else np.asarray(src).dtype


def boxFilter(src, ddepth: int, ksize, dst=None, anchor=(-1, -1), normalize: bool = True,
              borderType: int = BORDER_DEFAULT, *, variant: str = "auto", stream=None):
    """cv2.boxFilter as filter2D with a kernel of ones (divided by its area when ``normalize``)."""
    kw, kh = (int(k) for k in ksize)
    if kw <= 0 or kh <= 0:
        raise ValueError(f"boxFilter: ksize {tuple(ksize)} must be positive")
    kernel = np.full((kh, kw), 1.0 / (kw * kh) if normalize else 1.0)
    return filter2D(src, ddepth, kernel, dst, anchor, 0, borderType, variant=variant, stream=stream)


def blur(src, ksize, dst=None, anchor=(-1, -1), borderType: int = BORDER_DEFAULT, *, variant: str = "auto",
         stream=None):
    """cv2.blur: boxFilter with the input's depth, normalized."""
    return boxFilter(src, -1, ksize, dst, anchor, True, borderType, variant=variant, stream=stream)


def _sobel_kernel(ksize: int, order: int) -> np.ndarray:
    """One axis of cv2.getDerivKernels: binomial smoothing times ``order`` differences."""
    if ksize == -1:  # Scharr
        if order > 1:
            raise ValueError("Scharr (ksize -1) takes dx, dy <= 1")
        return np.array([3.0, 10.0, 3.0] if order == 0 else [-1.0, 0.0, 1.0])
    if ksize == 1 and order > 0:
        ksize = 3
    if ksize % 2 == 0 or ksize > 31 or ksize < 1:
        raise ValueError(f"ksize {ksize} must be 1, 3, 5, 7 ... 31 (or -1 for Scharr)")
    if order >= ksize:
        raise ValueError(f"derivative order {order} needs ksize > {order}")
    kernel = np.array([1.0])
    for _ in range(ksize - 1 - order):
        kernel = np.convolve(kernel, [1.0, 1.0])
    for _ in range(order):
        kernel = np.convolve(kernel, [-1.0, 1.0])
    return kernel


def getDerivKernels(dx: int, dy: int, ksize: int) -> tuple[np.ndarray, np.ndarray]:
    """cv2.getDerivKernels(dx, dy, ksize) without normalisation: (kx, ky) as column vectors."""
    return _sobel_kernel(ksize, dx).reshape(-1, 1), _sobel_kernel(ksize, dy).reshape(-1, 1)


def Sobel(src, ddepth: int, dx: int, dy: int, dst=None, ksize: int = 3, scale: float = 1, delta: float = 0,
          borderType: int = BORDER_DEFAULT, *, variant: str = "auto", stream=None):
    """cv2.Sobel (ksize -1: Scharr) as filter2D with getDerivKernels' outer product times ``scale``."""
    kx, ky = getDerivKernels(dx, dy, ksize)
    return filter2D(src, ddepth, np.outer(ky, kx) * scale, dst, (-1, -1), delta, borderType, variant=variant,
                    stream=stream)


def Laplacian(src, ddepth: int, dst=None, ksize: int = 1, scale: float = 1, delta: float = 0,
              borderType: int = BORDER_DEFAULT, *, variant: str = "auto", stream=None):
    """cv2.Laplacian as filter2D: ksize 1 and 3 with cv2's 3x3 kernels, larger ones with the sum
    of the second-derivative Sobel kernels (cv2 sums two filtered images; the same sum here)."""
    if ksize == 1:
        kernel = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=np.float64)
    elif ksize == 3:
        kernel = np.array([[2, 0, 2], [0, -8, 0], [2, 0, 2]], dtype=np.float64)
    else:
        d2, d0 = _sobel_kernel(ksize, 2), _sobel_kernel(ksize, 0)
        kernel = np.outer(d0, d2) + np.outer(d2, d0)
    return filter2D(src, ddepth, kernel * scale, dst, (-1, -1), delta, borderType, variant=variant, stream=stream)


def convolve(src, filter="gauss5", variant: str = "auto", border: str = "reflect101", out=None, stream=None, *,
             depth: int = -1, anchor=(-1, -1), delta: float = 0, border_value: float = 0, normalize: bool = False,
             batch: bool | None = None):
    """Filters ``src`` as ``cuconv IN OUT --filter FILTER --variant VARIANT --border BORDER`` does.

    ``filter``: anything the CLI's --filter takes (a preset, ``gaussian:3,1.2``, ``5x5:...``, a
    file path), a :class:`Filter`, or a 2-D array of weights. ``border``: reflect101, reflect,
    replicate, constant (with ``border_value``) or wrap. ``depth``: the output's, as cv2's ddepth.
    ``batch=True`` reads a 3-D array as (N, H, W) gray images instead of one (H, W, C) image.
    """
    if isinstance(filter, Filter):
        filt = filter
    elif isinstance(filter, str):
        filt = _cuconv.load_filter(filter, normalize)
    else:
        filt = _kernel_filter(filter)
    if not isinstance(border, str):
        raise TypeError(f"border: expected a name such as 'reflect101', got {type(border).__name__}")
    border_code = _BORDER_CODES.get(border)
    if stream is None and not batch and border_code is not None:
        result = _cuconv.filter_tensor(src, depth, filt, out, anchor, delta, border_code, border_value, variant)
        if result is not None:
            return result
    return _filter(src, filt, depth, out, anchor, delta, border, border_value, variant, stream, batch)
