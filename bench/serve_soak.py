#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A soak of `cuconv serve`: many clients at once for a while, mixed calls, every answer checked.

    python3 bench/serve_soak.py --cuconv CUCONV --out RESULT.json [--clients 16] [--seconds 120]

Starts a server in an empty folder of its own, on a private socket, with umask 077 and another
TMPDIR; CLIENTS threads then run single-image calls (PNG, JPEG, 16-bit PNG, float TIFF, standard
input and output, a few that must fail) with CUCONV_SERVER=always from the work folder, relative
paths only, until SECONDS have passed. Every call's exit code is checked against the expected one;
one call in five is run again in-process (--server never) and the two outputs must be
byte-identical (JPEG outputs are compared through `--codec opencv` on both sides, since `auto` may
take the warm GPU codec when served), except where the in-process twin's `-v` says `auto` took the
CPU to spare the GPU's start-up (docs/serve.md, "Same bytes"): then the two images must meet the
pass rule (integers: at most 1 apart on at most 0.1% of the values; float: 1e-5 relative). The server's resident memory and, where nvidia-smi answers,
the GPU memory in use are sampled every 2 s: "flat" means the last third's peak is within 5% (and
64 MiB) of the first third's. Writes counts, failures (the first 20) and the samples as JSON;
exits 1 on any failure or growth.
"""
import argparse
import json
import os
import random
import subprocess
import tempfile
import threading
import time

import cv2
import numpy as np


def make_inputs(folder):
    rng = np.random.default_rng(11)
    def photo(w, h, c=3):
        base = cv2.resize(rng.integers(0, 255, (h // 40 + 2, w // 40 + 2, c), dtype=np.uint8), (w, h),
                          interpolation=cv2.INTER_CUBIC)
        return cv2.add(base, rng.integers(0, 24, base.shape, dtype=np.uint8))
    cv2.imwrite(os.path.join(folder, "small.png"), photo(64, 64))
    cv2.imwrite(os.path.join(folder, "mid.png"), photo(640, 480))
    cv2.imwrite(os.path.join(folder, "photo.jpg"), photo(2000, 2000), [cv2.IMWRITE_JPEG_QUALITY, 90])
    cv2.imwrite(os.path.join(folder, "deep.png"), photo(500, 300).astype(np.uint16) * 257)
    cv2.imwrite(os.path.join(folder, "float.tif"), photo(300, 200, 1).astype(np.float32) / 255.0)
    with open(os.path.join(folder, "broken.png"), "wb") as f:
        f.write(open(os.path.join(folder, "small.png"), "rb").read()[:200])


# (input, output extension, filter, extra arguments, expected exit code, use stdin/stdout)
CALLS = [
    ("small.png", "png", "gauss5", [], 0, False),
    ("small.png", "png", "box:7", [], 0, True),
    ("mid.png", "tif", "sharpen", [], 0, False),
    ("photo.jpg", "jpg", "gauss5", [], 0, False),
    ("photo.jpg", "png", "gaussian:0,2", [], 0, False),
    ("deep.png", "png", "box:5", [], 0, False),
    ("float.tif", "tif", "gauss5", [], 0, False),
    ("broken.png", "png", "gauss5", [], 3, False),
    ("small.png", "png", "no-such-filter", [], 3, False),
    ("mid.png", "sub/png", "box:3", [], 0, False),
]


# What `-v` says when `auto` filters a single image on the CPU to spare the GPU's start-up
# (src/engine/cpu_or_gpu.cpp): the one case whose bytes may differ from a served call's.
CPU_SIDE = b"auto: the CPU (about"


def within_pass_rule(a_bytes, b_bytes):
    """The pass rule between two encoded images (docs/accuracy.md): same shape; integers at most 1
    apart on at most 0.1% of the values (none below 1000 values); float within 1e-5 relative."""
    if not a_bytes or not b_bytes:
        return False
    a = cv2.imdecode(np.frombuffer(a_bytes, np.uint8), cv2.IMREAD_UNCHANGED)
    b = cv2.imdecode(np.frombuffer(b_bytes, np.uint8), cv2.IMREAD_UNCHANGED)
    if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        if np.isnan(a).any() or np.isnan(b).any():
            return False
        scale = np.maximum(np.abs(a.astype(np.float64)), 1.0)
        return bool((np.abs(a.astype(np.float64) - b) <= 1e-5 * scale).all())
    diff = np.abs(a.astype(np.int64) - b.astype(np.int64))
    return int(diff.max()) <= 1 and int((diff > 0).sum()) <= diff.size // 1000


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def gpu_mib():
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=10).stdout
        return sum(int(x) for x in text.split())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def flat(samples):
    values = [v for v in samples if v is not None]
    if len(values) < 6:
        return True
    third = len(values) // 3
    first, last = max(values[:third]), max(values[-third:])
    return last <= first * 1.05 or last - first <= 64 * 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuconv", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=120)
    args = parser.parse_args()
    cuconv = os.path.abspath(args.cuconv)

    root = tempfile.mkdtemp(prefix="cuconv-soak.")
    work, server_home, server_tmp, sock_dir = (os.path.join(root, d) for d in ("work", "srv", "srvtmp", "s"))
    for d in (work, server_home, server_tmp):
        os.mkdir(d)
    os.mkdir(sock_dir, 0o700)
    make_inputs(work)
    os.mkdir(os.path.join(work, "sub"))
    socket = os.path.join(sock_dir, "socket")
    log = open(os.path.join(root, "serve.log"), "w")
    server = subprocess.Popen(["sh", "-c", f"umask 077; exec '{cuconv}' serve --socket '{socket}' --idle-exit 0"],
                              cwd=server_home, stderr=log, env=dict(os.environ, TMPDIR=server_tmp))
    env = dict(os.environ, CUCONV_SOCKET=socket, CUCONV_NO_GPU_WARNING="1")
    for _ in range(300):
        if subprocess.run([cuconv, "--server", "always", "--version"], env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.1)

    lock = threading.Lock()
    counts = {"calls": 0, "compared": 0, "cpu_side_within_rule": 0, "failures": 0}
    failures = []
    deadline = time.monotonic() + args.seconds

    def fail(text):
        with lock:
            counts["failures"] += 1
            if len(failures) < 20:
                failures.append(text)

    def run(argv, mode, stdin_path=None):
        stdin = open(os.path.join(work, stdin_path), "rb") if stdin_path else subprocess.DEVNULL
        try:
            return subprocess.run([cuconv, "--server", mode] + argv, cwd=work, env=env, stdin=stdin,
                                  capture_output=True, timeout=120)
        finally:
            if stdin_path:
                stdin.close()

    def client(index):
        rng = random.Random(index)
        n = 0
        while time.monotonic() < deadline:
            source, ext, flt, extra, expected, piped = rng.choice(CALLS)
            n += 1
            folder, _, ext = ext.rpartition("/")  # "sub/png": an output in a relative subfolder
            name = os.path.join(folder, f"c{index}-{n}.{ext}")
            compare = expected == 0 and rng.random() < 0.2
            codec = ["--codec", "opencv"] if compare and (ext == "jpg" or source.endswith(".jpg")) else []
            if piped:
                argv = ["-", f"{ext}:-", "-f", flt] + extra + codec
                served = run(argv, "always", source)
                out_bytes = served.stdout
            else:
                argv = [source, name, "-f", flt] + extra + codec
                served = run(argv, "always")
                out_bytes = open(os.path.join(work, name), "rb").read() if served.returncode == 0 else b""
            with lock:
                counts["calls"] += 1
            if served.returncode != expected:
                fail(f"{argv}: served exit {served.returncode}, expected {expected}: {served.stderr[-300:]!r}")
                continue
            if compare:
                if piped:
                    twin_run = run(argv + ["-v"], "never", source)
                    twin = twin_run.stdout
                else:
                    twin_name = os.path.join(folder, "twin-" + os.path.basename(name))
                    twin_run = run([source, twin_name] + argv[2:] + ["-v"], "never")
                    twin = open(os.path.join(work, twin_name), "rb").read() if twin_run.returncode == 0 else None
                    if twin is not None:
                        os.unlink(os.path.join(work, twin_name))
                with lock:
                    counts["compared"] += 1
                    if twin != out_bytes and CPU_SIDE in twin_run.stderr:
                        counts["cpu_side_within_rule"] += 1
                if twin != out_bytes and not (CPU_SIDE in twin_run.stderr and within_pass_rule(twin, out_bytes)):
                    fail(f"{argv}: served and in-process outputs differ")
            if not piped and served.returncode == 0:
                os.unlink(os.path.join(work, name))

    rss, gpu, times = [], [], []
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        rss.append(rss_kib(server.pid))
        gpu.append(gpu_mib())
        times.append(round(time.monotonic() - start, 1))
        time.sleep(2)
    for t in threads:
        t.join()
    server.terminate()
    server_exit = server.wait(timeout=60)
    log.close()
    serve_log = open(os.path.join(root, "serve.log")).read()
    bad_log = [line for line in serve_log.splitlines() if "internal error" in line or "Sanitizer" in line]
    litter = [f for f in os.listdir(work) if f.startswith(".cuconv-tmp-")] + os.listdir(server_tmp)
    result = {
        "clients": args.clients, "seconds": args.seconds, **counts,
        "server_exit": server_exit, "server_log_problems": bad_log[:20], "litter": litter[:20],
        "rss_flat": flat(rss), "gpu_flat": flat([g * 1024 if g is not None else None for g in gpu]),
        "rss_kib": rss, "gpu_mib": gpu, "sample_s": times, "failure_examples": failures,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    ok = (counts["failures"] == 0 and server_exit == 0 and not bad_log and not litter and result["rss_flat"]
          and result["gpu_flat"])
    print(f"soak: {counts['calls']} calls by {args.clients} clients in {args.seconds:.0f} s, "
          f"{counts['compared']} compared in-process, {counts['failures']} failures, server exit {server_exit}, "
          f"RSS {'flat' if result['rss_flat'] else 'GROWING'} ({rss[0] if rss else '?'} -> {rss[-1] if rss else '?'} KiB), "
          f"GPU {'flat' if result['gpu_flat'] else 'GROWING'}, litter {len(litter)}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
