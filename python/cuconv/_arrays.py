# SPDX-License-Identifier: Apache-2.0
"""How cuconv sees the arrays it is given: host (NumPy) or CUDA (``__cuda_array_interface__`` or
DLPack), their images (one (H, W, C) image or a batch), and how an output of the same kind is
made. The engine itself is reached through ``_cuconv``; nothing here filters."""
from __future__ import annotations

import contextlib

import numpy as np

from . import _cuconv

# Element types as OpenCV depths (cv2.CV_8U ...), and back.
DEPTHS = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 2, np.dtype(np.int16): 3, np.dtype(np.float32): 5}
DTYPES = {depth: dtype for dtype, depth in DEPTHS.items()}
INPUT_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32))
_DLPACK_CUDA = 2  # kDLCUDA in DLPack's device types


def _cuda_array_interface(obj):
    """``obj.__cuda_array_interface__``, or None where it has none or cannot describe itself there
    (PyTorch raises for element types the interface has no code for; DLPack is used then)."""
    if _is_torch(obj) and obj.requires_grad:
        obj = obj.detach()
    try:
        return getattr(obj, "__cuda_array_interface__", None)
    except (TypeError, KeyError, ValueError):
        return None


def is_cuda_array(obj) -> bool:
    """Whether ``obj`` lives in CUDA device memory (PyTorch, CuPy, JAX, Numba ...)."""
    return cuda_array(obj, "array") is not None


def cuda_array(obj, what: str) -> "CudaArray | None":
    """``obj`` as a CudaArray, read once; None for host arrays (NumPy, a CPU tensor, anything
    that is not a CUDA array). A PyTorch tensor is read through its own attributes: its
    ``__cuda_array_interface__`` is Python code that costs several microseconds a call."""
    if isinstance(obj, np.ndarray):
        return None
    if _is_torch(obj) and getattr(obj, "is_cuda", False):
        dtype = _TORCH_DTYPES.get(str(obj.dtype))
        if dtype is not None:
            return CudaArray(obj, what, torch_dtype=dtype)
    cai = _cuda_array_interface(obj)
    if cai is not None:
        return CudaArray(obj, what, cai=cai)
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is None or dlpack_device()[0] != _DLPACK_CUDA:
        return None
    return CudaArray(obj, what)


def image_shape(shape: tuple, batch: bool | None, what: str = "src") -> tuple[int, int, int, int]:
    """(N, H, W, C) of an array shape: (H, W) and (H, W, C) as cv2 reads them, (N, H, W, C) a batch;
    with ``batch=True`` the first axis always counts images, so (N, H, W) is a batch of gray ones."""
    ndim = len(shape)
    if batch:
        if ndim == 3:
            shape = (*shape, 1)
        elif ndim != 4:
            raise ValueError(f"{what}: a batch is (N, H, W) or (N, H, W, C), got shape {tuple(shape)}")
    elif ndim == 2:
        shape = (1, *shape, 1)
    elif ndim == 3:
        shape = (1, *shape)
    elif ndim != 4:
        raise ValueError(f"{what}: expected (H, W), (H, W, C) or a batch (N, H, W, C), got shape {tuple(shape)}")
    n, h, w, c = (int(x) for x in shape)
    if c not in (1, 3, 4):
        raise ValueError(f"{what}: unsupported channel count {c} (supported: 1, 3, 4)")
    if n == 0 or h == 0 or w == 0:
        raise ValueError(f"{what}: the image is empty (0 pixels)")
    return n, h, w, c


def check_input_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in INPUT_DTYPES:
        raise TypeError(f"src: unsupported dtype {dtype} (supported: uint8, uint16, float32)")
    return dtype


def pixels_contiguous(strides: tuple, itemsize: int, channels: int, width: int) -> bool:
    """Whether an (H, W, C) image's pixels are packed and its rows do not overlap (rows may be
    further apart, not backwards; a broadcast row, stride 0, is copied)."""
    row, pixel, value = strides
    return (channels == 1 or value == itemsize) and pixel == channels * itemsize and row >= width * pixel


# ---- host (NumPy) -----------------------------------------------------------------------------------

def host_images(array: np.ndarray, shape4: tuple) -> np.ndarray:
    """``array`` viewed as (N, H, W, C) without a copy."""
    return array.reshape(shape4) if array.ndim != 4 else array


def packed_host_image(image: np.ndarray) -> np.ndarray:
    """``image`` (H, W, C) itself when cv::Mat can wrap it, else a packed copy."""
    if pixels_contiguous(image.strides, image.itemsize, image.shape[2], image.shape[1]):
        return image
    return np.ascontiguousarray(image)


# ---- CUDA arrays --------------------------------------------------------------------------------------

class CudaArray:
    """What the engine needs of a CUDA array: pointer, shape, byte strides, dtype, device, and the
    stream its producer named (``__cuda_array_interface__`` v3), from whichever protocol it speaks."""

    def __init__(self, obj, what: str, torch_dtype: np.dtype | None = None, cai: dict | None = None):
        self.obj = obj
        self.stream = None
        self.what = what
        if torch_dtype is not None:  # a CUDA tensor of a dtype cuconv knows (cuda_array)
            self.ptr, self.readonly, self.dtype = int(obj.data_ptr()), False, torch_dtype
            self.shape = tuple(obj.shape)
            self.strides = tuple(s * torch_dtype.itemsize for s in obj.stride())
            self.device = int(obj.device.index)
            return
        cai = cai if cai is not None else _cuda_array_interface(obj)
        if cai is not None:
            self.ptr = int(cai["data"][0])
            self.readonly = bool(cai["data"][1])
            self.shape = tuple(int(x) for x in cai["shape"])
            self.dtype = np.dtype(cai["typestr"])
            strides = cai.get("strides")
            if strides is None:  # C-contiguous
                step, packed = self.dtype.itemsize, []
                for n in reversed(self.shape):
                    packed.append(step)
                    step *= n
                strides = packed[::-1]
            self.strides = tuple(int(s) for s in strides)
            self.stream = cai.get("stream")
            self.device = _cai_device(obj)
        else:
            ptr, shape, strides, code, bits, device = _cuconv.dlpack_array(obj)
            self.ptr, self.shape, self.device, self.readonly = ptr, tuple(shape), device, False
            kind = {0: "i", 1: "u", 2: "f"}.get(code, "?")
            self.dtype = np.dtype(f"{kind}{bits // 8}") if kind != "?" else np.dtype("V")
            self.strides = tuple(s * self.dtype.itemsize for s in strides)

    def images(self, shape4: tuple, batch_axis: bool):
        """(first image's pointer, row pitch, bytes from one image to the next, all in bytes) of the
        (N, H, W, C) view, or None when its pixels are not packed (the caller then works on a
        packed copy)."""
        strides = strides4(self.strides, self.dtype.itemsize, batch_axis)
        if not pixels_contiguous(strides[1:], self.dtype.itemsize, shape4[3], shape4[2]):
            return None
        return self.ptr, strides[1], strides[0]


def strides4(strides: tuple, itemsize: int, batch_axis: bool) -> tuple:
    """Byte strides of the (N, H, W, C) view of an array with ``strides``; ``batch_axis``: its
    first axis counts images."""
    if len(strides) == 4:
        return tuple(strides)
    if len(strides) == 2:
        return (0, *strides, itemsize)
    return (*strides, itemsize) if batch_axis else (0, *strides)


# PyTorch element types by name, as NumPy's (those a tensor can hold and the engine reads or
# names in its errors); a tensor of another type is read through its interfaces.
_TORCH_DTYPES = {"torch.uint8": np.dtype(np.uint8), "torch.uint16": np.dtype(np.uint16),
                 "torch.int16": np.dtype(np.int16), "torch.float32": np.dtype(np.float32),
                 "torch.float64": np.dtype(np.float64), "torch.int32": np.dtype(np.int32),
                 "torch.int64": np.dtype(np.int64), "torch.int8": np.dtype(np.int8),
                 "torch.float16": np.dtype(np.float16)}


def _is_torch(obj) -> bool:
    return type(obj).__module__.startswith("torch")


def _is_cupy(obj) -> bool:
    return type(obj).__module__.startswith("cupy")


def _cai_device(obj) -> int:
    device = getattr(obj, "device", None)
    index = getattr(device, "index", None)  # torch.device
    if index is not None:
        return int(index)
    identifier = getattr(device, "id", None)  # cupy.cuda.Device
    if identifier is not None:
        return int(identifier)
    return -1  # the calling thread's current device


def current_stream(src) -> int | None:
    """The cudaStream_t of PyTorch's or CuPy's current stream for ``src``'s device; None for
    other arrays."""
    if _is_torch(src.obj):
        import torch
        # The raw handle without making a torch.cuda.Stream object (what torch's own kernels ask).
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return int(raw(src.device))
        return int(torch.cuda.current_stream(src.obj.device).cuda_stream)
    if _is_cupy(src.obj):
        import cupy
        return int(cupy.cuda.get_current_stream().ptr)
    return None


def stream_handle(stream, src, current: int | None) -> int:
    """The cudaStream_t to queue on: ``stream`` (an integer, or an object with ``cuda_stream`` as
    torch.cuda.Stream has, or ``ptr`` as cupy.cuda.Stream has), else the framework's ``current``
    stream for ``src``'s device (current_stream), else the stream its ``__cuda_array_interface__``
    names, else the legacy default stream (0)."""
    if stream is not None:
        for attribute in ("cuda_stream", "ptr"):
            if hasattr(stream, attribute):
                return int(getattr(stream, attribute))
        return int(stream)
    if current is not None:
        return current
    if src.stream not in (None, 1, 2):  # 1 and 2: the legacy and per-thread default streams
        return int(src.stream)
    return 0


def framework_stream(src, handle: int):
    """``handle`` as a stream object of ``src``'s framework (PyTorch or CuPy), to allocate on and
    to record arrays' use on; None for other arrays and for the legacy default stream (0)."""
    if handle == 0:
        return None
    if _is_torch(src.obj):
        import torch
        return torch.cuda.ExternalStream(handle, device=src.obj.device)
    if _is_cupy(src.obj):
        import cupy
        try:
            return cupy.cuda.ExternalStream(handle, src.obj.device.id)
        except TypeError:  # CuPy before 11 takes the pointer only (the current device's stream)
            return cupy.cuda.ExternalStream(handle)
    return None


def on_stream(framework_stream_object):
    """A context in which PyTorch or CuPy queue their allocations and copies on
    ``framework_stream_object`` (framework_stream); no change for None."""
    if framework_stream_object is None:
        return contextlib.nullcontext()
    if _is_torch(framework_stream_object):
        import torch
        return torch.cuda.stream(framework_stream_object)
    return framework_stream_object  # a cupy.cuda.Stream is its own context


def record_use(array, framework_stream_object) -> None:
    """Tells PyTorch's caching allocator that ``array`` is used on ``framework_stream_object`` (a
    stream other than the one it was made on), so its memory is not handed out again before the
    work queued there is done. CuPy has no such call: keep CuPy arrays alive until then."""
    if framework_stream_object is not None and _is_torch(array) and _is_torch(framework_stream_object):
        array.record_stream(framework_stream_object)


def empty_like_cuda(src, shape: tuple, dtype: np.dtype):
    """An uninitialised CUDA array of ``src``'s kind (PyTorch or CuPy) on its device."""
    if _is_torch(src.obj):
        import torch
        torch_dtype = {np.dtype(np.uint8): torch.uint8, np.dtype(np.uint16): torch.uint16,
                       np.dtype(np.int16): torch.int16, np.dtype(np.float32): torch.float32}[dtype]
        return torch.empty(shape, dtype=torch_dtype, device=src.obj.device)
    if _is_cupy(src.obj):
        import cupy
        with cupy.cuda.Device(src.obj.device.id):
            return cupy.empty(shape, dtype=dtype)
    raise TypeError(f"{src.what}: cuconv makes outputs for PyTorch tensors and CuPy arrays; for a "
                    f"{type(src.obj).__name__}, pass out= (a CUDA array of the output's shape and dtype)")


def packed_cuda_copy(obj, why: str = "the pixels are not packed (a channel or column stride)"):
    """A packed copy of a CUDA array made by its own framework."""
    if _is_torch(obj):
        return obj.clone(memory_format=__import__("torch").contiguous_format)
    if _is_cupy(obj):
        import cupy
        return cupy.array(obj, order="C", copy=True)
    raise ValueError(f"{type(obj).__name__}: {why}, and cuconv cannot copy this kind of array; pass "
                     "another one")


def overlap(a: "CudaArray", b: "CudaArray") -> bool:
    """Whether two CUDA arrays' memory ranges (first to last byte they can reach) overlap."""
    if a.device != b.device:
        return False

    def span(x):
        low = high = x.ptr
        for stride, n in zip(x.strides, x.shape):
            if stride < 0:
                low += stride * (n - 1)
            else:
                high += stride * (n - 1)
        return low, high + x.dtype.itemsize
    (a_low, a_high), (b_low, b_high) = span(a), span(b)
    return a_low < b_high and b_low < a_high
