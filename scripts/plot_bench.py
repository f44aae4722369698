#!/usr/bin/env python3
"""Turns a cuconv_bench JSON file into a PNG chart: % of the copy roof per variant and filter size.

    /usr/bin/python3 scripts/plot_bench.py docs/gpu-runs/bench-d9b5b86-h200.json docs/bench-h200.png

Needs python3-matplotlib (Debian package).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src: str, dst: str) -> None:
    doc = json.load(open(src))
    results = doc["results"]
    images = sorted({r["image"] for r in results}, key=lambda s: s != "f32 1ch")
    variants = [v for v in ["basic", "constmem", "tiled", "tiled-halo", "cached", "opencv"]
                if any(r["variant"] == v for r in results)]
    sizes = sorted({r["filter"] for r in results if r["filter"] > 0})
    fig, axes = plt.subplots(1, len(images), figsize=(6 * len(images), 4.2), sharey=True)
    axes = axes if len(images) > 1 else [axes]
    width = 0.8 / len(variants)
    for ax, image in zip(axes, images):
        roof = next(r for r in results if r["image"] == image and r["variant"] == "copy")
        for i, variant in enumerate(variants):
            values = [next((r["roof_percent"] for r in results
                            if r["image"] == image and r["filter"] == k and r["variant"] == variant), 0.0)
                      for k in sizes]
            ax.bar([x + i * width for x in range(len(sizes))], values, width, label=variant)
        ax.set_xticks([x + width * (len(variants) - 1) / 2 for x in range(len(sizes))])
        ax.set_xticklabels([f"{k}x{k}" for k in sizes])
        ax.set_yscale("log")
        ax.set_title(f"{image}, {roof['size']}^2 (roof {roof['gbps']:.0f} GB/s)")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("% of device-to-device copy roof (log)")
    axes[-1].legend(fontsize=8)
    fig.suptitle(f"cuconv variants on {doc['gpu']}: median of {doc['reps']} runs")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
