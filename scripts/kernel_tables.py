#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Markdown tables of issue 26's shapes from one cuconv_bench JSON file (`--variants
auto,fast,tensor,fft`) and the NPP peer's JSON lines of the same device call: one table per image
for bench/results/benchmarks.md (every path beside `auto`'s choice) and the README's table (`auto`, the
fastest other path, NPP, the copy roof and both roof percentages).

    python3 scripts/kernel_tables.py BENCH.json NPP.jsonl images  > sections.md
    python3 scripts/kernel_tables.py BENCH.json NPP.jsonl readme  > table.md

NPP.jsonl "-": the NPP lines kept in BENCH.json under "npp_same_lease" (bench/results/*-all.json).
"""
import json
import sys

IMAGES = [("f32 1ch", 16384, 16384), ("8U 1ch", 16384, 16384), ("8U RGB", 8192, 8192), ("8U RGB", 6000, 4000),
          ("8U RGBA", 8192, 8192), ("16U 1ch", 8192, 8192), ("16U RGB", 8192, 8192)]
FILTERS = ["3x3", "5x5", "9x9", "15x15", "17x17", "31x31", "gaussian 9x9", "gaussian 15x15", "gaussian 31x31"]
README_ROWS = [("f32 1ch", 16384, 16384, f) for f in ["3x3", "15x15", "31x31"]] + \
    [("8U 1ch", 16384, 16384, f) for f in ["3x3", "9x9", "gaussian 31x31"]] + \
    [("8U RGB", 8192, 8192, f) for f in ["9x9", "31x31"]] + \
    [("8U RGB", 6000, 4000, f) for f in ["3x3", "gaussian 15x15"]] + \
    [("16U 1ch", 8192, 8192, f) for f in ["3x3", "31x31"]] + \
    [("16U RGB", 8192, 8192, f) for f in ["9x9"]]
PATHS = ["fast", "tensor", "fft"]
LABEL = {"1ch": "1 channel", "RGB": "RGB", "RGBA": "RGBA"}


def pretty(text):
    return text.replace("x", "×")


def image_label(name, width, height):
    depth, layout = name.split()
    size = f"{width}²" if width == height else f"{width}×{height}"
    return f"{depth} {LABEL[layout]} {size}" + (" (camera frame)" if (width, height) == (6000, 4000) else "")


class Run:
    def __init__(self, bench_path, npp_path):
        bench = json.load(open(bench_path))
        self.rows = bench["results"]
        self.npp = bench["npp_same_lease"] if npp_path == "-" else \
            [json.loads(line) for line in open(npp_path) if line.strip()]

    def row(self, name, width, height, filt, variant):
        for r in self.rows:
            if (r["image"], r["width"], r["height"], r["filter"]) == (name, width, height, filt) and \
                    (r["variant"] == variant or (variant == "auto" and r["variant"].startswith("auto ("))):
                return r
        return None

    def copy_roof(self, name, width, height):
        r = next(r for r in self.rows if (r["image"], r["width"], r["height"]) == (name, width, height))
        return r["copy_roof_ms"]

    def npp_ms(self, name, width, height, filt):
        if filt.startswith("gaussian"):
            return None
        side = int(filt.split("x")[0])
        for r in self.npp:
            if r["variant"] == "npp" and (r["image"], r["width"], r["height"], r["filter"]) == (name, width, height, side):
                return r["median_ms"] if r.get("npp_status", 0) == 0 else None
        return None


def picked(auto):
    return auto["variant"][len("auto ("):-1]


def images(run):
    for name, width, height in IMAGES:
        if run.row(name, width, height, "3x3", "auto") is None:
            continue
        print(f"**{image_label(name, width, height)}** (copy roof {run.copy_roof(name, width, height):.3f} ms)\n")
        print("| filter | `auto` | `fast` | `tensor` | `fft` | NPP | `auto`: % of copy roof, of FMA roof |")
        print("|---|---|---|---|---|---|---|")
        for filt in FILTERS:
            auto = run.row(name, width, height, filt, "auto")
            if auto is None:
                continue
            cells = []
            for path in PATHS:
                r = run.row(name, width, height, filt, path)
                text = f"{r['median_ms']:.3f}" if r else "—"
                dense = run.row(name, width, height, filt, "fast (dense path)") if path == "fast" else None
                if dense:
                    text += f" (dense {dense['median_ms']:.3f})"
                cells.append(text)
            npp = run.npp_ms(name, width, height, filt)
            print(f"| {pretty(filt)} | {auto['median_ms']:.3f} (`{picked(auto)}`) | {' | '.join(cells)} | "
                  f"{'—' if npp is None else format(npp, '.3f')} | "
                  f"{auto['roof_percent']:.0f}, {auto['fma_roof_percent']:.0f} |")
        print()


def readme(run):
    print("| image | filter | cuconv `auto` (variant; fastest other path) | NPP | copy of the bytes | "
          "`auto`: % of copy roof, of FMA roof |")
    print("|---|---|---|---|---|---|")
    for name, width, height, filt in README_ROWS:
        auto = run.row(name, width, height, filt, "auto")
        if auto is None:
            continue
        others = [r for r in (run.row(name, width, height, filt, p) for p in PATHS) if r and r["variant"] != picked(auto)]
        other = min(others, key=lambda r: r["median_ms"])
        npp = run.npp_ms(name, width, height, filt)
        print(f"| {image_label(name, width, height)} | {pretty(filt)} | {auto['median_ms']:.3f} ms (`{picked(auto)}`; "
              f"`{other['variant']}` {other['median_ms']:.3f}) | {'n/a' if npp is None else format(npp, '.3f') + ' ms'} | "
              f"{run.copy_roof(name, width, height):.3f} ms | {auto['roof_percent']:.0f}, {auto['fma_roof_percent']:.0f} |")
    # `auto` against NPP over every shape and size both ran.
    ratios = []
    for r in run.npp:
        if r["variant"] != "npp" or r.get("npp_status", 0) != 0:
            continue
        auto = run.row(r["image"], r["width"], r["height"], f"{r['filter']}x{r['filter']}", "auto")
        if auto:
            ratios.append((r["median_ms"] / auto["median_ms"], r))
    faster = sum(1 for q, _ in ratios if q > 1)
    low = min(ratios, key=lambda x: x[0])
    print(f"\n`auto` faster than NPP on {faster} of {len(ratios)} shapes both ran; smallest lead {low[0]:.2f}x "
          f"({low[1]['image']} {low[1]['width']}x{low[1]['height']} {low[1]['filter']}x{low[1]['filter']}), "
          f"largest {max(q for q, _ in ratios):.1f}x", file=sys.stderr)


if __name__ == "__main__":
    run = Run(sys.argv[1], sys.argv[2])
    {"images": images, "readme": readme}[sys.argv[3]](run)
