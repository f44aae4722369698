#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Markdown tables for the README from a cuconv_bench JSON file and the NPP peer's JSON lines:
the targets of the fast path (16384^2 f32 and 8U, 8192^2 8U RGB) next to the measured auto/fast,
NPP and best PMPP variant, each with the copy roof measured in the same run.

    python3 scripts/bench_tables.py BENCH.json [NPP.jsonl [PMPP_BENCH.json [CUDNN.jsonl]]] > table.md

PMPP_BENCH.json: an earlier run that timed the PMPP variants (when BENCH.json has only fast/auto;
"-" to take them from BENCH.json). CUDNN.jsonl: the cuDNN peer's lines (bench/cudnn_peer.cu), a
column of the every-size table.
"""
import json
import sys

PMPP = ["basic", "constmem", "tiled", "tiled-halo", "cached"]
TARGETS = [  # (image, size, filter, target ms or None, target text)
    ("f32 1ch", 16384, "3x3", None, ">= 90% of copy roof"),
    ("f32 1ch", 16384, "5x5", None, ">= 90% of copy roof"),
    ("f32 1ch", 16384, "9x9", None, ">= 60% of copy roof"),
    ("f32 1ch", 16384, "15x15", 2.6, "<= 2.6 ms"),
    ("f32 1ch", 16384, "gaussian 15x15", 1.0, "<= 1.0 ms"),
    ("f32 1ch", 16384, "31x31", None, "-"),
    ("f32 1ch", 16384, "gaussian 31x31", None, "-"),
    ("8U 1ch", 16384, "3x3", 0.25, "<= 0.25 ms"),
    ("8U 1ch", 16384, "5x5", 0.30, "<= 0.30 ms"),
    ("8U RGB", 8192, "3x3", 0.28, "<= 0.28 ms"),
    ("8U RGB", 8192, "5x5", 0.30, "<= 0.30 ms"),
    ("8U RGB", 8192, "9x9", 0.70, "<= 0.70 ms"),
    ("8U RGB", 8192, "15x15", 1.9, "<= 1.9 ms"),
]
ROOF_TARGET = {"3x3": 0.9, "5x5": 0.9, "9x9": 0.6}


def shape(r):
    """A result's image size: N² for squares, WxH otherwise (results before "width" were square)."""
    width, height = r.get("width", r["size"]), r.get("height", r["size"])
    return f"{width}²" if width == height else f"{width}×{height}"


def main(bench_path, npp_path=None, pmpp_path=None, cudnn_path=None):
    rows = json.load(open(bench_path))["results"]
    pmpp_rows = json.load(open(pmpp_path))["results"] if pmpp_path and pmpp_path != "-" else rows
    cudnn = [json.loads(line) for line in open(cudnn_path)] if cudnn_path else []
    npp = [json.loads(line) for line in open(npp_path)] if npp_path else []

    def find(image, size, filt, variant_prefix):
        return [r for r in rows if r["image"] == image and r["size"] == size and r["filter"] == filt
                and r["variant"].startswith(variant_prefix)]

    print("| image | filter | target | auto (picks) | fast | NPP | best PMPP variant | copy roof | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    for image, size, filt, target_ms, text in TARGETS:
        auto = find(image, size, filt, "auto")
        fast = [r for r in find(image, size, filt, "fast") if r["variant"] == "fast"]
        if not auto:
            continue
        auto = auto[0]
        roof = auto["copy_roof_ms"]
        pmpp = sorted((r for r in pmpp_rows if r["image"] == image and r["size"] == size and r["filter"] == filt
                       and r["variant"] in PMPP), key=lambda r: r["median_ms"])
        n = [r for r in npp if r["variant"] == "npp" and r["image"] == image and r["size"] == size
             and f'{r["filter"]}x{r["filter"]}' == filt]
        if target_ms is not None:
            met = auto["median_ms"] <= target_ms
        elif filt in ROOF_TARGET:
            met = roof / auto["median_ms"] >= ROOF_TARGET[filt]
        else:
            met = None
        npp_text = f"{n[0]['median_ms']:.3f} ms" if n else "n/a"
        beats_npp = "" if not n else (" (faster than NPP)" if auto["median_ms"] < n[0]["median_ms"] else " (slower than NPP)")
        print(f"| {image} {size}² | {filt} | {text} | {auto['median_ms']:.3f} ms ({auto['variant'][6:-1]}), "
              f"{100 * roof / auto['median_ms']:.0f}% of roof | "
              f"{fast[0]['median_ms']:.3f} ms | "
              f"{npp_text} | "
              f"{(pmpp[0]['variant'] + ' ' + format(pmpp[0]['median_ms'], '.3f') + ' ms') if pmpp else '-'} | {roof:.3f} ms | "
              f"{'-' if met is None else ('yes' if met else 'no')}{beats_npp} |")

    # The separable path's gain: rank-1 filters timed on `fast` both ways (cuconv_bench's
    # "fast (dense path)" rows).
    dense_rows = [r for r in rows if r["variant"] == "fast (dense path)"]
    if dense_rows:
        print()
        print("| image | filter | fast, separable path | fast, dense path | gain |")
        print("|---|---|---|---|---|")
        for d in dense_rows:
            sep = [r for r in find(d["image"], d["size"], d["filter"], "fast") if r["variant"] == "fast"]
            if sep:
                print(f"| {d['image']} {shape(d)} | {d['filter']} | {sep[0]['median_ms']:.3f} ms | "
                      f"{d['median_ms']:.3f} ms | {d['median_ms'] / sep[0]['median_ms']:.2f}x |")

    # Every square filter of the benchmark against the peers: `auto` as a user runs it.
    if npp:
        print()
        cudnn_header = " cuDNN (TF32 tensor cores) |" if cudnn else ""
        print("| image | filter | auto (picks) | NPP | auto / NPP |" + cudnn_header)
        print("|---|---|---|---|---|" + ("---|" if cudnn else ""))
        for n in npp:
            if n["variant"] != "npp" or n.get("npp_status", 0) != 0:
                continue
            filt = f'{n["filter"]}x{n["filter"]}'
            auto = find(n["image"], n["size"], filt, "auto")
            if not auto:
                continue
            auto = auto[0]
            ratio = auto["median_ms"] / n["median_ms"]
            c = [r for r in cudnn if r["variant"] == "cudnn" and r["image"] == n["image"] and r["size"] == n["size"]
                 and r["filter"] == n["filter"]]
            if not cudnn:
                cudnn_cell = ""
            elif c:
                cudnn_cell = (f" {c[0]['median_ms']:.3f} ms |" if "median_ms" in c[0] else " error |")
            else:  # the peer is f32 only; an f32 case without a line ended without a result
                cudnn_cell = " no result |" if n["image"].startswith("f32") else " - |"
            print(f"| {n['image']} {shape(n)} | {filt} | {auto['median_ms']:.3f} ms ({auto['variant'][6:-1]}) | "
                  f"{n['median_ms']:.3f} ms | {ratio:.2f}{' **slower**' if ratio > 1 else ''} |{cudnn_cell}")


if __name__ == "__main__":
    main(*sys.argv[1:5])
