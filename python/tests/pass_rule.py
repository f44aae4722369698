# SPDX-License-Identifier: Apache-2.0
"""The pass rule (docs/accuracy.md) in NumPy, for GPU results against the CPU path: the exact sum
in float64 through the border rule, then the integer rule (at most 1 off, and at most a share of
the values off from both the CPU's result and the exact sum) or the float rule (each value within
float_rule_bound(taps) x (sum|k| max|x| + |delta|), the rule's form without the run's window)."""
import numpy as np

_PAD_MODES = {"reflect101": "reflect", "reflect": "symmetric", "replicate": "edge", "wrap": "wrap",
              "constant": "constant"}


def exact_sum(src, kernel, border="reflect101", border_value=0.0, delta=0.0, anchor=(-1, -1)):
    """float64 correlation of an (H, W[, C]) image with `kernel` (no rounding), cv2.filter2D's
    anchor convention, the border made by np.pad."""
    kernel = np.asarray(kernel, np.float64)
    kh, kw = kernel.shape
    ax = kw // 2 if anchor[0] < 0 else anchor[0]
    ay = kh // 2 if anchor[1] < 0 else anchor[1]
    image = np.asarray(src, np.float64)
    if image.ndim == 2:
        image = image[..., None]
    pads = ((ay, kh - 1 - ay), (ax, kw - 1 - ax), (0, 0))
    if border == "constant":
        padded = np.pad(image, pads, mode="constant", constant_values=border_value)
    else:
        padded = np.pad(image, pads, mode=_PAD_MODES[border])
    h, w = image.shape[:2]
    out = np.zeros_like(image)
    for i in range(kh):
        for j in range(kw):
            if kernel[i, j] != 0:
                out += kernel[i, j] * padded[i:i + h, j:j + w]
    out += delta
    return out if np.ndim(src) == 3 else out[..., 0]


def float_rule_bound(taps: int) -> float:
    nu = taps / 16777216.0
    gamma = nu / (1.0 - nu) if nu < 1.0 else 1.0
    return max(gamma, 1e-5)


def check(result, cpu, src, kernel, exact, delta=0.0, border_value=0.0, max_differing_fraction=0.001):
    """Raises AssertionError with the numbers when `result` misses the rule against `cpu` and `exact`."""
    result, cpu = np.asarray(result), np.asarray(cpu)
    assert result.shape == cpu.shape and result.dtype == cpu.dtype, (result.shape, result.dtype, cpu.shape, cpu.dtype)
    if result.dtype == np.float32:
        finite = np.abs(np.asarray(src, np.float64)[np.isfinite(src)])
        largest = max(float(finite.max()) if finite.size else 0.0, abs(border_value))
        scale = float(np.abs(kernel).sum()) * largest + abs(delta)
        error = np.abs(result.astype(np.float64) - cpu.astype(np.float64))
        bound = float_rule_bound(np.size(kernel)) * scale
        assert np.isfinite(result).all() == np.isfinite(cpu).all(), "a NaN or infinity where the CPU has none"
        assert error.max() <= bound, f"float: max error {error.max():.3g} over the bound {bound:.3g}"
        return
    info = np.iinfo(result.dtype)
    rounded = np.clip(np.rint(exact), info.min, info.max)
    wide = result.astype(np.int64)
    off = np.abs(wide - cpu.astype(np.int64))
    assert off.max() <= 1, f"integer: {int(off.max())} off the CPU's result"
    differing = int(np.count_nonzero((wide != cpu) & (wide != rounded)))
    allowed = int(result.size * max_differing_fraction)
    assert differing <= allowed, f"integer: {differing} values differ from both (allowed {allowed})"
