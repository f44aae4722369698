# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the Python suite: the cv2 reference, random images, and the GPU skip."""
import numpy as np
import pytest

import cuconv

GPU_AVAILABLE, NO_GPU_REASON = cuconv.device_available()
needs_gpu = pytest.mark.skipif(not GPU_AVAILABLE, reason=f"needs a CUDA device: {NO_GPU_REASON}")


def random_image(shape, dtype, seed=0):
    """Values over the whole range of integer types; floats in [-2, 2) with some large ones."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    image = rng.uniform(-2, 2, size=shape).astype(dtype)
    image.flat[::7] *= 1000
    return image


@pytest.fixture(autouse=True)
def _quiet_no_gpu_warning(monkeypatch, request):
    """The no-GPU warning is the subject of its own test; elsewhere it would only be noise."""
    if "no_gpu_warning" not in request.node.name:
        monkeypatch.setattr(cuconv, "_warned", True)
