#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The timings of docs/coming-from.md's "A folder of photos": the same Gaussian blur (sigma 2,
edges replicated) by cuconv, ImageMagick 6, libvips and OpenCV, per call and over a folder.

    /usr/bin/python3 bench/coming_from_bench.py CUCONV [N] [OUT.json]

Makes N (default 20) 2000x1500 JPEG photos from samples/ (resized, so each differs), then times
whole processes as a shell script would run them: one call per tool on one photo (median of 5
after a warm-up), and the folder: `cuconv --out-dir`, `mogrify -path`, a shell loop of
`vips gaussblur`, and one Python process looping over cv2.GaussianBlur. Then rank-1 filters per
call (gauss5, box:11: cuconv auto's separable CPU path beside --variant opencv, vips conv and
cv2.filter2D). Prints Markdown tables and writes the numbers as JSON. Needs imagemagick, libvips-tools and python3-opencv.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGMA = 2


def timed(argv, **kwargs):
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - start


def main():
    cuconv = os.path.abspath(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    out_json = sys.argv[3] if len(sys.argv) > 3 else None
    convert = shutil.which("convert-im6.q16") or "convert"
    mogrify = shutil.which("mogrify-im6.q16") or "mogrify"
    work = tempfile.mkdtemp(prefix="coming_from_bench.")
    photos = os.path.join(work, "photos")
    os.makedirs(photos)
    sources = [cv2.imread(os.path.join(ROOT, "samples", name)) for name in ("coffee.png", "chelsea.png", "astronaut.png")]
    for i in range(count):
        image = cv2.resize(sources[i % len(sources)], (2000 + i, 1500), interpolation=cv2.INTER_CUBIC)[:, :2000]
        cv2.imwrite(os.path.join(photos, f"p{i:03d}.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    one = os.path.join(photos, "p000.jpg")
    env = dict(os.environ, CUCONV_NO_GPU_WARNING="1", CUCONV_SERVER="never")
    cv2_call = ("import cv2,sys; i=cv2.imread(sys.argv[1]); "
                f"cv2.imwrite(sys.argv[2], cv2.GaussianBlur(i, (0, 0), {SIGMA}, borderType=cv2.BORDER_REPLICATE))")
    per_call = {
        "cuconv": lambda out: [cuconv, one, out, "--filter", f"gaussian:0,{SIGMA}", "--border", "replicate", "--overwrite"],
        "ImageMagick": lambda out: [convert, one, "-gaussian-blur", f"0x{SIGMA}", out],
        "vips": lambda out: ["vips", "gaussblur", one, out, str(SIGMA), "--precision", "float", "--min-ampl", "0.01"],
        "cv2": lambda out: ["/usr/bin/python3", "-c", cv2_call, one, out],
    }
    results = {"photos": count, "size": "2000x1500 JPEG", "sigma": SIGMA, "per_call_s": {}, "folder_s": {}}
    for tool, argv in per_call.items():
        out = os.path.join(work, f"one-{tool}.jpg")
        timed(argv(out), env=env)  # warm-up: page cache, libraries
        results["per_call_s"][tool] = statistics.median(timed(argv(out), env=env) for _ in range(5))
    folder = {
        "cuconv": lambda out: [cuconv, "--out-dir", out, photos, "--filter", f"gaussian:0,{SIGMA}", "--border", "replicate", "-q"],
        "ImageMagick": lambda out: [mogrify, "-path", out, "-gaussian-blur", f"0x{SIGMA}"] + sorted(
            os.path.join(photos, name) for name in os.listdir(photos)),
        "vips": lambda out: ["sh", "-c", f'for f in "{photos}"/*.jpg; do vips gaussblur "$f" "{out}/$(basename "$f")" '
                             f"{SIGMA} --precision float --min-ampl 0.01; done"],
        "cv2": lambda out: ["/usr/bin/python3", "-c",
                            "import cv2,os,sys\nfor n in sorted(os.listdir(sys.argv[1])):\n"
                            " i=cv2.imread(os.path.join(sys.argv[1],n))\n"
                            f" cv2.imwrite(os.path.join(sys.argv[2],n),cv2.GaussianBlur(i,(0,0),{SIGMA},"
                            "borderType=cv2.BORDER_REPLICATE))", photos, out],
    }
    for tool, argv in folder.items():
        out = os.path.join(work, f"out-{tool}")
        os.makedirs(out)
        results["folder_s"][tool] = timed(argv(out), env=env)
    results["separable"] = separable_calls(cuconv, one, work, env)
    shutil.rmtree(work, ignore_errors=True)
    print_separable(results["separable"])
    print(f"| {count} photos, 2000x1500 JPEG, Gaussian sigma {SIGMA} | " + " | ".join(results["per_call_s"]) + " |")
    print("|---|" + "---|" * len(results["per_call_s"]))
    print("| one call (median of 5) | " + " | ".join(f"{v * 1000:.0f} ms" for v in results["per_call_s"].values()) + " |")
    print(f"| the folder of {count} | " + " | ".join(f"{v:.2f} s" for v in results["folder_s"].values()) + " |")
    if out_json:
        with open(out_json, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")


def separable_calls(cuconv, one, work, env):
    """Rank-1 filters without a GPU: cuconv `auto` (the separable CPU path where it keeps
    filter2D's bits) beside `--variant opencv` (filter2D), `vips conv` of the same matrix and a
    cv2.filter2D call; medians of 5 whole calls, and cuconv's own filter time (-v)."""
    rows = {}
    for spec, side, weights in (("gauss5", 5, [1, 4, 6, 4, 1]), ("box:11", 11, [1] * 11)):
        mat = os.path.join(work, f"{side}.mat")
        total = sum(weights) ** 2
        with open(mat, "w") as f:
            f.write(f"{side} {side} {total} 0\n")
            for a in weights:
                f.write(" ".join(str(a * b) for b in weights) + "\n")
        kernel = f"np.outer({weights}, {weights}) / {total}"
        cv2_call = ("import cv2,sys,numpy as np; i=cv2.imread(sys.argv[1]); "
                    f"cv2.imwrite(sys.argv[2], cv2.filter2D(i, -1, {kernel}, borderType=cv2.BORDER_REPLICATE))")
        out = os.path.join(work, f"sep-{side}.jpg")
        calls = {
            "cuconv auto": [cuconv, one, out, "--filter", spec, "--border", "replicate", "--overwrite"],
            "cuconv --variant opencv": [cuconv, one, out, "--filter", spec, "--border", "replicate", "--overwrite",
                                        "--variant", "opencv"],
            "vips conv": ["vips", "conv", one, out, mat, "--precision", "integer"],
            "cv2.filter2D": ["/usr/bin/python3", "-c", cv2_call, one, out],
        }
        row = {}
        for tool, argv in calls.items():
            timed(argv, env=env)
            row[tool + " call_s"] = statistics.median(timed(argv, env=env) for _ in range(5))
        for tool in ("cuconv auto", "cuconv --variant opencv"):
            kernel_ms = []
            for _ in range(5):
                done = subprocess.run(calls[tool] + ["-v"], check=True, capture_output=True, text=True, env=env)
                kernel_ms.append(float(done.stderr.split("kernel ")[1].split(" ms")[0]))
            row[tool + " filter_ms"] = statistics.median(kernel_ms)
        rows[spec] = row
    return rows


def print_separable(rows):
    print("| filter | cuconv auto | cuconv --variant opencv | vips conv | cv2.filter2D |")
    print("|---|---|---|---|---|")
    for spec, row in rows.items():
        print(f"| {spec} | {row['cuconv auto call_s'] * 1000:.0f} ms ({row['cuconv auto filter_ms']:.1f} ms filter) | "
              f"{row['cuconv --variant opencv call_s'] * 1000:.0f} ms "
              f"({row['cuconv --variant opencv filter_ms']:.1f} ms filter) | "
              f"{row['vips conv call_s'] * 1000:.0f} ms | {row['cv2.filter2D call_s'] * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
