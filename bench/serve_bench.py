#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-call wall time of cuconv served and in-process, as the shell sees whole processes.

    python3 bench/serve_bench.py --cuconv CUCONV [--engine CUCONV_ENGINE] --out RESULT.json [--rounds 3]
                                 [--parts single,xargs,loop]

Makes its own images (numpy + OpenCV's Python module): a 64x64 PNG, a 2000x2000 JPEG, a
6000x4000 JPEG and 200 photos of 2000x2000 at quality 90. For each image and filter it times, in
interleaved rounds (each round in a new seeded order; in-process auto against opencv is also
given as the median of the rounds' ratios): `--variant opencv` (CPU), in-process `auto` (`--server never`), served (CUCONV,
the thin front end), served with the engine binary as its own client (ENGINE), and two served
floors: `--codec opencv` (OpenCV's codec in the server) and the 1x1 identity filter (decode and
encode with a trivial filter),
while a `cuconv serve` runs on a private socket. Then 200 photos through `xargs -P16` (served,
in-process auto, opencv) beside batch mode, and a shell loop of 20 single calls. Writes every
sample and the medians as JSON.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

import cv2
import numpy as np


def make_images(folder, photos):
    rng = np.random.default_rng(7)
    def photo(w, h):
        # Smooth structure plus noise: compresses like a photo, not like white noise.
        base = cv2.resize(rng.integers(0, 255, (h // 50 + 2, w // 50 + 2, 3), dtype=np.uint8), (w, h),
                          interpolation=cv2.INTER_CUBIC)
        return cv2.add(base, rng.integers(0, 24, (h, w, 3), dtype=np.uint8))
    cv2.imwrite(os.path.join(folder, "small.png"), photo(64, 64))
    cv2.imwrite(os.path.join(folder, "photo.jpg"), photo(2000, 2000), [cv2.IMWRITE_JPEG_QUALITY, 90])
    cv2.imwrite(os.path.join(folder, "big.jpg"), photo(6000, 4000), [cv2.IMWRITE_JPEG_QUALITY, 90])
    os.makedirs(os.path.join(folder, "photos"), exist_ok=True)
    one = photo(2000, 2000)
    for i in range(photos):
        shifted = np.roll(one, i * 7, axis=1)
        cv2.imwrite(os.path.join(folder, "photos", f"p{i:03d}.jpg"), shifted, [cv2.IMWRITE_JPEG_QUALITY, 90])


def timed(command, env):
    start = time.perf_counter()
    done = subprocess.run(command, shell=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ms = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {command}\n{done.stderr.decode(errors='replace')}")
    return ms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuconv", required=True)
    parser.add_argument("--engine", help="cuconv-engine, timed as a client of its own")
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--photos", type=int, default=200)
    parser.add_argument("--parts", default="single,xargs,loop", help="which parts to time (comma-separated)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    shuffle = random.Random(11)
    work = tempfile.mkdtemp(prefix="cuconv-serve-bench-")
    make_images(work, args.photos)
    socket = os.path.join(work, "socket")
    env = dict(os.environ, CUCONV_SOCKET=socket)
    server = subprocess.Popen([args.cuconv, "serve", "--idle-exit", "0"], env=env, stderr=open(
        os.path.join(work, "server.log"), "w"))
    for _ in range(100):  # until it answers
        if subprocess.run([args.cuconv, "--server", "always", "--version"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            break
        time.sleep(0.1)
    # The server's GPU warm-up runs beside its first accepts: one served call waits for it here.
    timed(f"{args.cuconv} --server always {work}/small.png {work}/warm.png -f gauss5 --overwrite", env)
    timed(f"{args.cuconv} --server always {work}/photo.jpg {work}/warm.jpg -f gauss5 --overwrite", env)
    cuconv = args.cuconv
    ways = {
        "opencv": f"{cuconv} --server never --variant opencv",
        "in-process auto": f"{cuconv} --server never",
        "served": f"{cuconv} --server always",
    }
    floors = {"served --codec opencv": f"{cuconv} --server always --codec opencv"}
    if args.engine:
        floors["served (engine binary as client)"] = f"{args.engine} --server always"
    result = {"single": [], "xargs": [], "loop": [], "rounds": args.rounds,
              "gpu": (subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip()
                      if shutil.which("nvidia-smi") else "none"),
              "cpus": os.cpu_count()}
    for image in ("small.png", "photo.jpg", "big.jpg") if "single" in parts else ():
        for spec in ("gauss5", "gaussian:15,4"):
            samples = {way: [] for way in list(ways) + list(floors) + ["served, 1x1 identity (codec floor)"]}
            for _ in range(args.rounds):
                out = os.path.join(work, "out-" + image)
                # A new order each round, so that no way always runs first (or right after another).
                order = list(ways.items()) + list(floors.items())
                shuffle.shuffle(order)
                for way, command in order:
                    samples[way].append(timed(f"{command} {work}/{image} {out} -f {spec} --overwrite", env))
                samples["served, 1x1 identity (codec floor)"].append(
                    timed(f"{cuconv} --server always {work}/{image} {out} -f 1x1:1 --overwrite", env))
            # In-process auto against opencv round by round (the same round's conditions): the
            # median of the ratios, beside the ratio of the medians.
            paired = statistics.median(a / o for a, o in zip(samples["in-process auto"], samples["opencv"]))
            result["single"].append({"image": image, "filter": spec, "ms": samples,
                                     "median_ms": {w: statistics.median(v) for w, v in samples.items()},
                                     "auto_over_opencv_paired_median": paired})
    photos = os.path.join(work, "photos")
    xargs = {way: f"ls {photos} | xargs -P16 -I{{}} {command} {photos}/{{}} {work}/x/{{}} -f gauss5"
             for way, command in ways.items()}
    xargs["batch mode"] = f"{cuconv} --server never --out-dir {work}/x -f gauss5 -q {photos}"
    xargs["batch mode, served"] = f"{cuconv} --server always --out-dir {work}/x -f gauss5 -q {photos}"
    loop = {way: f"for i in $(seq 20); do {command} {work}/photo.jpg {work}/l/o$i.jpg -f gauss5; done"
            for way, command in ways.items()}
    for _ in range(args.rounds):
        for way, command in xargs.items() if "xargs" in parts else ():
            shutil.rmtree(os.path.join(work, "x"), ignore_errors=True)
            os.makedirs(os.path.join(work, "x"))
            result["xargs"].append({"way": way, "ms": timed(command, env)})
        for way, command in loop.items() if "loop" in parts else ():
            shutil.rmtree(os.path.join(work, "l"), ignore_errors=True)
            os.makedirs(os.path.join(work, "l"))
            result["loop"].append({"way": way, "ms": timed(command, env)})
    server.terminate()
    server.wait(timeout=60)
    with open(os.path.join(work, "server.log")) as f:
        result["server_log_tail"] = f.read()[-2000:]
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for row in result["single"]:
        print(row["image"], row["filter"], {w: round(v, 1) for w, v in row["median_ms"].items()},
              "auto/opencv paired", round(row["auto_over_opencv_paired_median"], 3))
    for kind in ("xargs", "loop"):
        by_way = {}
        for row in result[kind]:
            by_way.setdefault(row["way"], []).append(row["ms"])
        print(kind, {w: [round(v) for v in vs] for w, vs in by_way.items()})


if __name__ == "__main__":
    main()
