#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Checks that `cuconv --variant opencv` equals cv2.filter2D(img, -1, kernel) bit for bit for a
# preset, a plain file, a .mat file and an inline filter over the four borders filter2D has.
# Needs python3-opencv: /usr/bin/python3 scripts/check-cv2-parity.py build/dev/cuconv samples
import cv2, numpy as np, subprocess, sys, os, tempfile
bin_, samples = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp()
g0 = np.outer([1,4,6,4,1],[1,4,6,4,1]) / 256.0
open(f"{d}/k.txt","w").write("\n".join(" ".join(repr(float(v)) for v in row) for row in g0) + "\n")
open(f"{d}/k.mat","w").write("5 5 256\n1 4 6 4 1\n4 16 24 16 4\n6 24 36 24 6\n4 16 24 16 4\n1 4 6 4 1\n")
g = np.outer([1,4,6,4,1],[1,4,6,4,1]).astype(np.float64)
specs = {"gauss5": g/256, f"{d}/k.txt": g/256, f"{d}/k.mat": g/256,
         "5x5:" + ",".join(str(v) for v in (g/256).ravel()): g/256}
borders = {"reflect101": cv2.BORDER_REFLECT_101, "reflect": cv2.BORDER_REFLECT,
           "replicate": cv2.BORDER_REPLICATE, "constant": cv2.BORDER_CONSTANT}
n = bad = 0
for img_name in ["camera.png", "coffee.png", "astronaut.png"]:
    img = cv2.imread(f"{samples}/{img_name}", cv2.IMREAD_UNCHANGED)
    for spec, k in specs.items():
        for bname, b in borders.items():
            out = f"{d}/o.png"
            r = subprocess.run([bin_, f"{samples}/{img_name}", out, "--filter", spec, "--variant", "opencv", "--border", bname], capture_output=True)
            ref = cv2.filter2D(img, -1, k, borderType=b)
            got = cv2.imread(out, cv2.IMREAD_UNCHANGED)
            n += 1
            if r.returncode != 0 or got.shape != ref.shape or not np.array_equal(got, ref):
                bad += 1; print("MISMATCH", img_name, spec[:20], bname, r.returncode)
print(f"{n} runs, {bad} mismatches (kinds: preset, plain .txt, .mat, inline; 4 filter2D borders; 3 images)")
