"""cuconv's extension module; use the cuconv package (docs/python.md)."""

from typing import Annotated

import numpy
from numpy.typing import NDArray

from cuconv import Error as Error


class Filter:
    """A parsed filter: weights (row-major, float64), size, anchor, offset."""

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    @property
    def anchor_x(self) -> int: ...

    @property
    def anchor_y(self) -> int: ...

    @property
    def offset(self) -> float: ...

    @property
    def origin(self) -> str: ...

    @property
    def weights(self) -> list[float]: ...

    def __repr__(self) -> str: ...

def load_filter(spec: str, normalize: bool = False) -> Filter:
    """
    A filter as the CLI's --filter takes it: preset, parametric, inline or file path.
    """

def filter_from_kernel(kernel: Annotated[NDArray[numpy.float64], dict(shape=(None, None), order='C', device='cpu', writable=False)]) -> Filter:
    """A filter from a 2-D float64 array."""

def preset_names() -> list[str]:
    """Names of the embedded presets, sorted."""

def gpu_variant_names() -> list[str]:
    """The GPU variants' names, as `variant=` takes them."""

def convolve_host(src: Annotated[NDArray, dict(device='cpu', writable=False)], dst: Annotated[NDArray, dict(device='cpu')], filter: Filter, variant: str, border: str, border_value: float, anchor_x: int, anchor_y: int, delta: float, ddepth: int) -> tuple:
    """
    Filters the host image src (H, W, C) into dst; (variant used, no-GPU reason, fallback).
    """

def convolve_device(src: int, src_pitch: int, dst: int, dst_pitch: int, height: int, width: int, channels: int, in_depth: int, out_depth: int, device: int, filter: Filter, variant: str, border: str, border_value: float, anchor_x: int, anchor_y: int, delta: float, ddepth: int, stream: int) -> str:
    """
    Queues the filter of a device image on stream; returns the variant queued.
    """

def filter_tensor(src: object | None, ddepth: object | None, filter: Filter, dst: object | None, anchor: object | None, delta: object | None, border: object | None, border_value: object | None, variant: object | None) -> object:
    """
    One PyTorch CUDA tensor image filtered on the current stream; None: the call needs the general path.
    """

def pinned_output(nbytes: int) -> object:
    """
    A uint8 NumPy array of nbytes in page-locked memory (kept for reuse when freed), or None.
    """

def pinned_output_bytes() -> tuple[int, int]:
    """(bytes of page-locked outputs in use, bytes kept free for reuse)."""

def dlpack_array(array: Annotated[NDArray, dict(device='cuda')]) -> tuple:
    """
    (pointer, shape, strides in elements, DLPack type code, bits, device) of a DLPack CUDA array.
    """

def device_available() -> tuple[bool, str]:
    """(whether a CUDA device can be used, why not)."""

def cuda_device_count() -> int:
    """Usable CUDA devices."""

def thread_workspace_bytes() -> int:
    """Device memory the calling thread's workspaces hold."""

opencv_version: str = '4.6.0'
