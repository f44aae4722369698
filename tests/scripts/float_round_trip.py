#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Float data with NaN, +-inf, -0 and a subnormal through cuconv's own codecs, each side checked by
code that is not cuconv's: the input PFM is written here byte by byte, cuconv decodes it and
encodes FORMAT (--no-filter: decode and encode only), and cv2 (python3-opencv) reads the result.
Every value must come back bit for bit (any NaN for a NaN). Exit 77 (Skipped) with the reason
where python3's cv2 is missing or cannot read FORMAT.
  float_round_trip.py CUCONV FORMAT   (exr, pfm, tiff)"""
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("OPENCV_IO_ENABLE_OPENEXR", "1")  # cv2 reads EXR only when asked to
try:
    import cv2
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: needs python3's cv2 and numpy (python3-opencv): {e}")
    sys.exit(77)

cuconv, fmt = sys.argv[1], sys.argv[2]
special = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.25, 1e-40, 3e38, -3e38, 7.0, -0.0]
for channels in (1, 3):
    values = np.array(special * (4 * channels), dtype=np.float32).reshape(6, 8, channels)
    values[5, 7, 0] = np.float32(-0.0)
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "in.pfm")
        with open(source, "wb") as f:  # PFM: header, then rows bottom to top, little-endian
            f.write(b"%s\n%d %d\n-1.0\n" % (b"PF" if channels == 3 else b"Pf", values.shape[1], values.shape[0]))
            rows = values[::-1] if channels == 1 else values[::-1, :, ::-1]  # PFM colour is RGB
            f.write(np.ascontiguousarray(rows).astype("<f4").tobytes())
        out_dir = os.path.join(work, "out")
        run = subprocess.run([cuconv, "--out-dir", out_dir, source, "--no-filter", "--filter", "gauss3", "--name",
                              "%s." + fmt, "--server", "never"], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"cuconv exited {run.returncode}: {run.stderr}")
        written = os.path.join(out_dir, "in." + fmt)
        back = cv2.imread(written, cv2.IMREAD_UNCHANGED)
        if back is None:
            print(f"SKIPPED: this cv2 ({cv2.__version__}) cannot read {fmt.upper()}; nothing compared")
            sys.exit(77)
        back = back.reshape(values.shape)
        if back.dtype != np.float32:
            sys.exit(f"{fmt}, {channels} channel(s): read back as {back.dtype}, not float32")
        want = values.view(np.uint32)
        got = back.view(np.uint32)
        same = (got == want) | (np.isnan(back) & np.isnan(values))
        if not same.all():
            y, x, c = np.argwhere(~same)[0]
            sys.exit(f"{fmt}, {channels} channel(s): {int((~same).sum())} value(s) differ, first at ({y}, {x}, {c}): "
                     f"wrote {values[y, x, c]!r} ({want[y, x, c]:#010x}), read {back[y, x, c]!r} ({got[y, x, c]:#010x})")
        print(f"{fmt}, {channels} channel(s): {values.size} values round-trip bit for bit "
              f"(NaN, +-inf, -0, subnormal included)")
