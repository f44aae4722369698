#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns cuconv_bench JSON (and optionally the NPP peer's JSON lines) into a PNG chart: median
time per filter for each variant, one panel per image case, log scale, with the copy roof as a
horizontal line.

    /usr/bin/python3 scripts/plot_bench.py BENCH.json OUT.png [NPP.jsonl]

Older benchmark files (integer filter sizes, one size per run) are drawn the same way.
Needs python3-matplotlib (Debian package).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [("f32 1ch", 16384), ("8U 1ch", 16384), ("8U RGB", 8192), ("f32 1ch", 8192), ("8U RGB (planar)", 8192)]
ORDER = ["basic", "constmem", "tiled", "tiled-halo", "cached", "fast", "fft", "auto", "npp"]


def filter_name(value) -> str:
    return f"{value}x{value}" if isinstance(value, int) else value


def main(src: str, dst: str, npp_path: str | None) -> None:
    doc = json.load(open(src))
    # "auto (fast)" -> "auto": one bar whatever it picked
    results = [dict(r, filter=filter_name(r["filter"]), variant=r["variant"].split(" (")[0]) for r in doc["results"]
               if r["variant"] != "fast (dense path)"]  # the separable-gain rows go to bench_tables.py
    if npp_path:
        for line in open(npp_path):
            r = json.loads(line)
            if r["variant"] == "npp":
                results.append(dict(r, filter=filter_name(r["filter"]),
                                    image={"8U RGB": "8U RGB"}.get(r["image"], r["image"])))
    panels = [(img, n) for img, n in PANELS if any(r["image"] == img and r["size"] == n for r in results)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.4), squeeze=False)
    for ax, (image, size) in zip(axes[0], panels):
        rows = [r for r in results if r["image"] == image and r["size"] == size]
        filters = [f for f in dict.fromkeys(r["filter"] for r in rows) if f not in ("-", "0x0")]
        variants = [v for v in ORDER if any(r["variant"] == v for r in rows)]
        width = 0.8 / max(len(variants), 1)
        for i, variant in enumerate(variants):
            values = [next((r["median_ms"] for r in rows if r["filter"] == f and r["variant"] == variant), 0.0)
                      for f in filters]
            ax.bar([x + i * width for x in range(len(filters))], values, width, label=variant)
        copies = [r["median_ms"] for r in rows if r["variant"] in ("copy", "cudaMemcpyAsync d2d")]
        if copies:
            ax.axhline(min(copies), color="black", linestyle="--", linewidth=1, label="copy roof")
        ax.set_xticks([x + width * (len(variants) - 1) / 2 for x in range(len(filters))])
        ax.set_xticklabels(filters, rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(f"{image}, {size}x{size}")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0][0].set_ylabel("median kernel time, ms (log)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"cuconv on {doc['gpu']}: median kernel time per filter (lower is better)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
