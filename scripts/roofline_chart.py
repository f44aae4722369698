#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The roofline chart of one kernel benchmark: for each image of issue 26's shapes and each filter,
`auto`'s time as a percentage of a device-to-device copy of the same bytes measured in the same run
(the memory roof every filter here is bound by), beside NPP's where the NPP peer ran in the same lease.

    python3 scripts/roofline_chart.py BENCH.json OUT.png      (pip install matplotlib)

BENCH.json: cuconv_bench's JSON with the NPP peer's lines under "npp_same_lease"
(bench/results/*-kernels-*-all.json). One panel per image; bars per filter.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_tables import IMAGES, Run, image_label, picked  # noqa: E402

FILTERS = ["3x3", "5x5", "gauss5 5x5", "gaussian 7x7", "9x9", "gaussian 9x9", "15x15", "gaussian 15x15",
           "box 15x15", "17x17", "gaussian 31x31", "31x31"]


def npp_percent(run, name, width, height, filt):
    ms = run.npp_ms(name, width, height, filt) if not filt.startswith(("gauss", "box")) else None
    return None if ms is None else 100.0 * run.copy_roof(name, width, height) / ms


def main():
    bench, out = sys.argv[1], sys.argv[2]
    run = Run(bench, "-")
    panels = [(n, w, h) for n, w, h in IMAGES if run.row(n, w, h, "3x3", "auto") is not None]
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 2.6 * len(panels)), sharex=False)
    gpu = json.load(open(bench)).get("gpu", "")
    for ax, (name, width, height) in zip(axes if len(panels) > 1 else [axes], panels):
        filters = [f for f in FILTERS if run.row(name, width, height, f, "auto") is not None]
        autos = [run.row(name, width, height, f, "auto") for f in filters]
        xs = range(len(filters))
        ax.bar([x - 0.2 for x in xs], [a["roof_percent"] for a in autos], width=0.4, label="cuconv auto")
        npp = [npp_percent(run, name, width, height, f) for f in filters]
        ax.bar([x + 0.2 for x in xs], [p or 0 for p in npp], width=0.4, label="NPP", color="tab:gray")
        for x, a in zip(xs, autos):
            ax.text(x - 0.2, a["roof_percent"] + 1, f"{a['roof_percent']:.0f}\n{picked(a)}", ha="center", fontsize=6)
        ax.axhline(100, color="black", linewidth=0.5)
        ax.set_ylim(0, 115)
        ax.set_ylabel("% of copy")
        ax.set_title(f"{image_label(name, width, height)}: copy roof {run.copy_roof(name, width, height):.3f} ms",
                     fontsize=9)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(filters, fontsize=7)
    (axes[0] if len(panels) > 1 else axes).legend(fontsize=7, loc="upper right")
    fig.suptitle(f"cuconv_bench on {gpu}: median time as % of a copy of the same bytes (higher is better)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(out, dpi=110)
    print(f"wrote {out}: {len(panels)} images")


if __name__ == "__main__":
    main()
