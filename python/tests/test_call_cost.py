# SPDX-License-Identifier: Apache-2.0
"""What one call does on the host besides filtering, checked without a device: a kernel array
passed again is not parsed again (the filter made from it is kept), a changed one is, and the
kept filters are bounded; a CUDA array's ``__cuda_array_interface__`` is read once per call for
the source and once for ``dst`` (PyTorch's is Python code that costs microseconds a read). The
device's side, that the call queues its work and never waits, is test_gpu.py's."""
import numpy as np
import pytest

import cuconv
from conftest import random_image

KERNEL = np.array([[1, 2, 1], [0, 3, -1], [-2, 1, 1]], dtype=np.float32) / 4


@pytest.fixture
def parses(monkeypatch):
    """The calls to the extension's kernel parser, with the kept filters emptied first."""
    calls = []
    parse = cuconv._cuconv.filter_from_kernel
    monkeypatch.setattr(cuconv._cuconv, "filter_from_kernel", lambda kernel: calls.append(kernel.shape) or parse(kernel))
    monkeypatch.setattr(cuconv, "_kernel_filters", {})
    return calls


def test_a_repeated_kernel_is_parsed_once(parses):
    src = random_image((20, 24, 3), np.uint8)
    first = cuconv.filter2D(src, -1, KERNEL, variant="opencv")
    for _ in range(5):
        np.testing.assert_array_equal(cuconv.filter2D(src, -1, KERNEL.copy(), variant="opencv"), first)
    assert len(parses) == 1
    # Other weights, and the same values as another dtype, are other kernels: parsed, and used.
    changed = KERNEL.copy()
    changed[1, 1] = 0
    np.testing.assert_array_equal(cuconv.filter2D(src, -1, changed, variant="opencv"),
                                  cuconv.filter2D(src, -1, np.asarray(changed, np.float64), variant="opencv"))
    assert len(parses) == 3
    assert not np.array_equal(cuconv.filter2D(src, -1, changed, variant="opencv"), first)
    assert len(parses) == 3
    # The shape is part of the kernel: a row of three weights is not their column.
    row = np.array([[1.0, 2.0, 1.0]]) / 4
    column = cuconv.filter2D(src, -1, row.T, variant="opencv")
    assert not np.array_equal(cuconv.filter2D(src, -1, row, variant="opencv"), column)
    assert len(parses) == 5


def test_a_refused_kernel_is_refused_every_time(parses):
    src = random_image((8, 8), np.float32)
    bad = KERNEL.copy()
    bad[0, 0] = np.nan
    for _ in range(2):
        with pytest.raises(ValueError, match="not a finite float"):
            cuconv.filter2D(src, -1, bad)
    assert len(parses) == 2


def test_kept_filters_are_bounded(parses):
    src = random_image((8, 8), np.float32)
    for i in range(3 * cuconv._KERNEL_FILTERS_KEPT):
        cuconv.filter2D(src, -1, KERNEL + i, variant="opencv")
    assert len(cuconv._kernel_filters) == cuconv._KERNEL_FILTERS_KEPT
    assert len(parses) == 3 * cuconv._KERNEL_FILTERS_KEPT


class CountingCaiArray:
    """A bare CUDA array (host memory posing as device memory) that counts the reads of its
    ``__cuda_array_interface__``."""

    def __init__(self, host):
        self.host, self.reads = host, 0

    @property
    def __cuda_array_interface__(self):
        self.reads += 1
        return {"data": (self.host.ctypes.data, False), "shape": self.host.shape, "typestr": self.host.dtype.str,
                "strides": None, "version": 3, "stream": None}


def test_a_cuda_array_is_read_once_per_call(monkeypatch):
    calls = []
    monkeypatch.setattr(cuconv._cuconv, "convolve_device", lambda *args: calls.append(args) or "fast")
    src = CountingCaiArray(np.zeros((2, 12, 16), np.float32))
    dst = CountingCaiArray(np.zeros((2, 12, 16), np.float32))
    assert cuconv.convolve(src, KERNEL, out=dst, batch=True, stream=99) is dst
    assert len(calls) == 2 and all(args[-1] == 99 for args in calls)
    assert (src.reads, dst.reads) == (1, 1)
