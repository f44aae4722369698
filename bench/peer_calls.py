#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One call per image, as a script makes them: cuconv (CPU path, served, and in-process `auto`)
beside the tools docs/coming-from.md maps to it, each a whole process timed as the shell sees it.

    python3 bench/peer_calls.py --cuconv CUCONV --out RESULT.json [--runs 7]

Images: samples/camera.png cut to 64x64, and a 2000x2000 photo-like JPEG made here. Filter: the
5x5 Gaussian (gauss5's weights), given to each tool in its own syntax. Tools missing here are left
out and named in the JSON. Medians of --runs calls after one warm-up call each.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

GAUSS5 = [1, 4, 6, 4, 1]


def timed(command, env):
    start = time.perf_counter()
    done = subprocess.run(command, shell=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {command}\n{done.stderr.decode(errors='replace')}")
    return (time.perf_counter() - start) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuconv", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="cuconv-peers-")
    os.chmod(work, 0o700)
    cuconv = args.cuconv
    env = dict(os.environ, CUCONV_SOCKET=os.path.join(work, "socket"), CUCONV_NO_GPU_WARNING="1")
    # Images: a 64x64 crop of camera.png, and astronaut.png enlarged to 2000x2000 at quality 90
    # (with vips, else OpenCV's Python module).
    if shutil.which("vips"):
        timed(f"vips crop {root}/samples/camera.png {work}/small.png 0 0 64 64", env)
        timed(f"vips resize {root}/samples/astronaut.png {work}/photo.jpg[Q=90] 3.90625", env)
    else:
        timed(f"python3 -c \"import cv2; c=cv2.imread('{root}/samples/camera.png', cv2.IMREAD_UNCHANGED); "
              f"cv2.imwrite('{work}/small.png', c[:64,:64]); a=cv2.imread('{root}/samples/astronaut.png'); "
              f"cv2.imwrite('{work}/photo.jpg', cv2.resize(a, (2000, 2000)), [cv2.IMWRITE_JPEG_QUALITY, 90])\"", env)
    kernel = [[a * b for b in GAUSS5] for a in GAUSS5]
    with open(os.path.join(work, "gauss5.mat"), "w") as f:
        f.write("5 5 256 0\n" + "\n".join(" ".join(str(v) for v in row) for row in kernel) + "\n")
    flat = ",".join(str(v) for row in kernel for v in row)
    server = subprocess.Popen([cuconv, "serve", "--idle-exit", "0"], env=env, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run([cuconv, "--server", "always", "--version"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            break
        time.sleep(0.1)
    tools = {
        "cuconv --variant opencv": lambda i, o: f"{cuconv} --server never --variant opencv {i} {o} -f gauss5 --overwrite",
        "cuconv, in-process auto": lambda i, o: f"{cuconv} --server never {i} {o} -f gauss5 --overwrite",
        "cuconv, served": lambda i, o: f"{cuconv} --server always {i} {o} -f gauss5 --overwrite",
    }
    missing = []
    if shutil.which("vips"):
        tools["vips conv"] = lambda i, o: f"vips conv {i} {o} {work}/gauss5.mat --precision integer"
    else:
        missing.append("vips")
    if shutil.which("magick") or (shutil.which("convert") and b"ImageMagick" in subprocess.run(
            ["convert", "-version"], capture_output=True).stdout):
        im = "magick" if shutil.which("magick") else "convert"
        tools["ImageMagick -convolve"] = lambda i, o: f"{im} {i} -define convolve:scale=1/256 -morphology Convolve '5x5:{flat}' {o}"
    else:
        missing.append("ImageMagick")
    python = next((p for p in ("/usr/bin/python3", shutil.which("python3") or "")
                   if p and subprocess.run([p, "-c", "import cv2"], capture_output=True).returncode == 0), None)
    if python:
        tools["python3 cv2.filter2D"] = lambda i, o: (
            f"{python} -c \"import cv2,numpy as n,sys; k=n.outer({GAUSS5},{GAUSS5})/256.0; "
            f"cv2.imwrite('{o}', cv2.filter2D(cv2.imread('{i}', cv2.IMREAD_UNCHANGED), -1, k))\"")
    else:
        missing.append("python3 cv2")
    result = {"runs": args.runs, "cpus": os.cpu_count(), "missing": missing, "calls": []}
    for image in ("small.png", "photo.jpg"):
        if not os.path.exists(os.path.join(work, image)):
            continue
        ext = os.path.splitext(image)[1]
        for name, command in tools.items():
            out = os.path.join(work, "out" + ext)
            timed(command(os.path.join(work, image), out), env)  # warm-up
            samples = [timed(command(os.path.join(work, image), out), env) for _ in range(args.runs)]
            result["calls"].append({"image": image, "tool": name, "ms": samples, "median_ms": statistics.median(samples)})
            print(f"{image:10} {name:28} {statistics.median(samples):8.1f} ms")
    server.terminate()
    server.wait(timeout=30)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
