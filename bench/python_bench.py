#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python package against its Python peers (issue 63, docs/python.md "Benchmark").

    python3 bench/python_bench.py [--out FILE.json] [--quick] [--cpu-only] [--reps N]
    python3 bench/python_bench.py --table FILE.json     (the Markdown table of docs/python.md)
    python3 bench/python_bench.py --match-bench KERNELS.json [--out FILE.json]

Per call (median of timed calls after warm-up, the device synchronised after each), throughput
(many calls queued, one synchronisation) and, on CUDA tensors, the host's time in one call on an
idle device (host_us: the per-call overhead) of:
  - cuconv.filter2D on a CUDA tensor (zero-copy) and on NumPy (upload, filter, download);
  - torch: F.pad(mode='reflect') + conv2d (what Kornia's filter2d runs), on a CUDA tensor and
    through NumPy (from_numpy().cuda(), conv, .cpu());
  - cv2.filter2D on the CPU;
  - CuPy's cupyx.scipy.ndimage.correlate (mode='mirror' is OpenCV's BORDER_REFLECT_101) and
    CV-CUDA's conv2d, where they are installed.
Shapes: 64x64 and 512x512 (per-call latency), 2048x2048, 8192x8192 and 16384x16384, float32
with 3x3 ... 15x15 filters, and 8192x8192 RGB 8-bit gauss5. Bytes moved (input + output) and GB/s
are reported. Without a GPU only the CPU rows run (--cpu-only forces that), as a smoke test.

--match-bench takes a cuconv_bench JSON of the same run (the same lease) and times the same
filters (the presets cuconv_bench names) through cuconv.convolve on CUDA tensors of its float32
8192x8192 and 16384x16384 shapes: per call and queued, against cuconv_bench's `auto` kernel median.
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np

cuconv = None  # imported by main(): --table needs no build

SIZES_LATENCY = [(64, 64), (512, 512)]
SIZES_LARGE = [(2048, 2048), (8192, 8192), (16384, 16384)]
WARMUP = 20
KSIZES = [3, 5, 9, 15]


def median_time(call, sync, reps, warmup=WARMUP):
    """Median seconds of one call followed by `sync` (the device's completion)."""
    for _ in range(warmup):
        call()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def host_time(call, sync, reps, warmup=WARMUP):
    """Median seconds the host spends in one call on an idle device (synchronised before each
    call, not timed): the per-call overhead, which a call on a CUDA array must keep small because
    it queues its work and returns (a call that waited for the device would show its kernel here)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    sync()
    return statistics.median(times)


def throughput_time(call, sync, reps):
    """Seconds per call with `reps` calls queued and one synchronisation."""
    call()
    sync()
    start = time.perf_counter()
    for _ in range(reps):
        call()
    sync()
    return (time.perf_counter() - start) / reps


# cuconv_bench's filters that are presets (bench/bench_filters.hpp), as cuconv.convolve's specs.
BENCH_PRESETS = {"sobel-x 3x3": "sobel-x", "gauss5 5x5": "gauss5", "gaussian 7x7": "gaussian:3,1.4",
                 "gaussian 9x9": "gaussian:4,1.8", "gaussian 15x15": "gaussian:7,2.5",
                 "gaussian 31x31": "gaussian:15,5", "box 15x15": "box:15"}


def match_bench(path, reps):
    """cuconv.convolve on CUDA tensors beside cuconv_bench's `auto` kernel medians in `path`."""
    import torch
    with open(path) as f:
        bench = json.load(f)
    sync = torch.cuda.synchronize
    rows = []
    for r in bench["results"]:
        # cuconv_bench names auto's rows "auto (fast)": auto and the variant it took.
        if not r["variant"].startswith("auto") or r["image"] != "f32 1ch" or r["size"] < 8192 or \
                r["filter"] not in BENCH_PRESETS:
            continue
        h, w = r["height"], r["width"]
        dev = torch.rand((h, w), device="cuda", dtype=torch.float32)
        out = torch.empty_like(dev)
        spec = BENCH_PRESETS[r["filter"]]
        call = lambda: cuconv.convolve(dev, filter=spec, out=out)  # noqa: E731
        n = max(20, reps)
        per_call = median_time(call, sync, n) * 1e3
        queued = min(throughput_time(call, sync, n) for _ in range(3)) * 1e3
        row = {"shape": [h, w], "filter": r["filter"], "spec": spec, "bench_variant": r["variant"],
               "bench_auto_ms": r["median_ms"],
               "per_call_ms": per_call, "queued_ms": queued, "queued_over_bench": queued / r["median_ms"],
               "per_call_over_bench": per_call / r["median_ms"]}
        rows.append(row)
        print(f"{h}x{w} {r['filter']:15s} cuconv_bench auto {r['median_ms']:.4f} ms  cuconv.convolve per call "
              f"{per_call:.4f} ({per_call / r['median_ms']:.3f}x)  queued {queued:.4f} ({queued / r['median_ms']:.3f}x)",
              flush=True)
        del dev, out
    return {"bench_commit": bench.get("commit"), "gpu": bench.get("gpu"), "reps": reps, "results": rows}


def peers(args):
    """The importable peers: name -> module (torch, cupy, cvcuda, cv2)."""
    found = {}
    for name in ("cv2",) + (() if args.cpu_only else ("torch", "cupy", "cvcuda")):
        try:
            found[name] = __import__(name)
        except ImportError:
            pass
    if "torch" in found and not found["torch"].cuda.is_available():
        del found["torch"]
    return found


def cases(args):
    for h, w in SIZES_LATENCY + ([] if args.quick else SIZES_LARGE):
        for k in KSIZES if (h, w) not in SIZES_LATENCY else (3, 5, 9):
            yield {"shape": (h, w), "channels": 1, "dtype": "float32", "ksize": k}
    if not args.quick:
        yield {"shape": (8192, 8192), "channels": 3, "dtype": "uint8", "ksize": 5, "filter": "gauss5"}


def run_case(case, mods, args, gpu):
    h, w = case["shape"]
    c, k = case["channels"], case["ksize"]
    rng = np.random.default_rng(0)
    dtype = np.dtype(case["dtype"])
    shape = (h, w) if c == 1 else (h, w, c)
    host = (rng.integers(0, 256, shape) if dtype == np.uint8 else rng.random(shape)).astype(dtype)
    kernel = (cuconv.getGaussianKernel(k, 0) @ cuconv.getGaussianKernel(k, 0).T).astype(np.float32)
    big = h * w >= 8192 * 8192
    reps = args.reps if h * w <= 512 * 512 else max(5, args.reps // (50 if big else 10))
    nbytes = 2 * host.nbytes
    rows = []

    def record(peer, where, per_call, queued=None, host=None):
        rows.append({"peer": peer, "input": where, "per_call_us": per_call * 1e6,
                     "throughput_us": None if queued is None else queued * 1e6,
                     "host_us": None if host is None else host * 1e6,
                     "gb_per_s": nbytes / (queued or per_call) / 1e9})

    none = lambda: None  # noqa: E731
    if "cv2" in mods and not big:
        cv2 = mods["cv2"]
        record("cv2.filter2D (CPU)", "numpy", median_time(lambda: cv2.filter2D(host, -1, kernel), none, reps))
    if not gpu:
        record("cuconv (CPU path)", "numpy", median_time(lambda: cuconv.filter2D(host, -1, kernel), none, reps))
        return rows
    torch = mods.get("torch")
    if torch is not None:
        sync = torch.cuda.synchronize
        dev = torch.from_numpy(host).cuda()
        out = torch.empty_like(dev)
        call = lambda: cuconv.filter2D(dev, -1, kernel, dst=out)  # noqa: E731
        record("cuconv", "cuda tensor", median_time(call, sync, reps), throughput_time(call, sync, reps),
               host_time(call, sync, reps))
        if not big:
            record("cuconv", "numpy", median_time(lambda: cuconv.filter2D(host, -1, kernel), sync, reps))
        weight = torch.from_numpy(np.ascontiguousarray(kernel)).cuda()[None, None].repeat(c, 1, 1, 1)
        pad = (k // 2, k // 2, k // 2, k // 2)

        def torch_conv(x):
            planes = x.float().reshape(1, h, w, c).permute(0, 3, 1, 2)
            y = torch.nn.functional.conv2d(torch.nn.functional.pad(planes, pad, mode="reflect"), weight, groups=c)
            return y.permute(0, 2, 3, 1).round_().clamp_(0, 255).to(x.dtype) if x.dtype == torch.uint8 else y

        call = lambda: torch_conv(dev)  # noqa: E731
        record("torch conv2d", "cuda tensor", median_time(call, sync, reps), throughput_time(call, sync, reps),
               host_time(call, sync, reps))
        if not big:
            record("torch conv2d", "numpy", median_time(lambda: torch_conv(torch.from_numpy(host).cuda()).cpu(),
                                                        sync, reps))
    cupy = mods.get("cupy")
    if cupy is not None:
        from cupyx.scipy import ndimage
        dev = cupy.asarray(host)
        weights = cupy.asarray(kernel if c == 1 else kernel[:, :, None])
        sync = cupy.cuda.Device().synchronize
        call = lambda: ndimage.correlate(dev, weights, mode="mirror")  # noqa: E731
        record("cupyx.scipy.ndimage.correlate", "cuda array", median_time(call, sync, reps),
               throughput_time(call, sync, reps))
    cvcuda = mods.get("cvcuda")
    if cvcuda is not None and torch is not None:
        tensor = cvcuda.as_tensor(torch.from_numpy(host).cuda().reshape(1, h, w, c), "NHWC")
        kern = cvcuda.as_tensor(torch.from_numpy(kernel).cuda(), "HW")
        call = lambda: cvcuda.conv2d(tensor, kern, (-1, -1), cvcuda.Border.REFLECT101)  # noqa: E731
        record("cvcuda.conv2d", "cuda tensor", median_time(call, torch.cuda.synchronize, reps),
               throughput_time(call, torch.cuda.synchronize, reps))
    return rows


PEER_COLUMNS = [("torch conv2d", "torch conv2d"), ("cv2.filter2D (CPU)", "cv2.filter2D (CPU)"),
                ("cupyx.scipy.ndimage.correlate", "CuPy correlate"), ("cvcuda.conv2d", "CV-CUDA conv2d")]


def markdown_table(report) -> str:
    """One row per shape, filter and kind of input (device or NumPy): cuconv's median per call
    beside each peer's on the same input kind (cv2 is always NumPy), and the ratio to the fastest
    peer measured (> 1: cuconv is faster)."""
    groups = {}
    for row in report["results"]:
        kind = "numpy" if row["input"] == "numpy" else "device"
        key = (tuple(row["shape"]), row["channels"], row["dtype"], row["ksize"])
        groups.setdefault(key, {}).setdefault(kind, {})[row["peer"]] = row["per_call_us"]
        if row["peer"].startswith("cv2"):  # the CPU peer stands beside both kinds
            groups[key].setdefault("device", {})[row["peer"]] = row["per_call_us"]
    header = ["image", "filter", "input", "cuconv us/call"] + [title for _, title in PEER_COLUMNS] + ["fastest peer / cuconv"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (shape, channels, dtype, ksize), kinds in sorted(groups.items(), key=lambda kv: (kv[0][0][0] * kv[0][0][1], kv[0])):
        for kind in ("device", "numpy"):
            times = kinds.get(kind, {})
            ours = times.get("cuconv") or times.get("cuconv (CPU path)")
            if ours is None:
                continue
            peers = [times.get(peer) for peer, _ in PEER_COLUMNS]
            measured = [t for t in peers if t is not None]
            ratio = f"{min(measured) / ours:.2f}" if measured else "-"
            cells = [f"{shape[0]}x{shape[1]}" + (f"x{channels}" if channels > 1 else "") + f" {dtype}", f"{ksize}x{ksize}",
                     "CUDA tensor" if kind == "device" else "NumPy", f"{ours:.1f}"]
            cells += ["-" if t is None else f"{t:.1f}" for t in peers] + [ratio]
            lines.append("| " + " | ".join(cells) + " |")
    gpu = report.get("gpu_name") or ("GPU" if report.get("gpu") else "no GPU (CPU path)")
    lines.append("")
    lines.append(f"Medians of per-call times with a device synchronisation after each call ({gpu}, cuconv "
                 f"{report.get('cuconv')}, peers {', '.join(f'{k} {v}' for k, v in sorted(report.get('peers', {}).items()))}).")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="latency shapes only")
    parser.add_argument("--cpu-only", action="store_true", help="the CPU rows only (a smoke test)")
    parser.add_argument("--reps", type=int, default=1000,
                        help="timed calls per row after %d warm-up calls (2048x2048: reps/10, "
                             "8192x8192 and up: reps/50)" % WARMUP)
    parser.add_argument("--table", metavar="JSON", help="print the Markdown table of a results file and exit")
    parser.add_argument("--match-bench", metavar="JSON", help="cuconv_bench's JSON of the same run: time its "
                        "preset filters at float32 8192x8192 and 16384x16384 through cuconv.convolve and exit")
    args = parser.parse_args()
    if args.table:
        with open(args.table) as f:
            print(markdown_table(json.load(f)))
        return
    global cuconv
    import cuconv
    if args.match_bench:
        report = match_bench(args.match_bench, min(args.reps, 200))
        report["cuconv"] = cuconv.__version__
        if args.out:
            with open(args.out, "w") as f:
                json.dump(report, f, indent=1)
        return
    gpu = cuconv.device_available()[0] and not args.cpu_only
    mods = peers(args)
    results = []
    for case in cases(args):
        for row in run_case(case, mods, args, gpu):
            row.update({"shape": list(case["shape"]), "channels": case["channels"], "dtype": case["dtype"],
                        "ksize": case["ksize"]})
            results.append(row)
            print(f"{case['shape'][0]}x{case['shape'][1]}x{case['channels']} {case['dtype']} {case['ksize']}x"
                  f"{case['ksize']}  {row['peer']:32s} {row['input']:12s} {row['per_call_us']:10.1f} us/call"
                  + ("" if row["host_us"] is None else f" ({row['host_us']:.1f} us on the host)"))
    gpu_name = mods["torch"].cuda.get_device_name() if gpu and "torch" in mods else None
    report = {"cuconv": cuconv.__version__, "gpu": gpu, "gpu_name": gpu_name, "host": platform.node(),
              "reps": args.reps, "warmup": WARMUP,
              "peers": {name: getattr(mod, "__version__", "?") for name, mod in mods.items()}, "results": results}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
