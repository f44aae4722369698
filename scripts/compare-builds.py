#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two builds of cuconv on the same inputs: are their outputs the same bytes?

    python3 scripts/compare-builds.py --old OLD_CUCONV --new NEW_CUCONV [--readme README.md]
                                      [--samples samples] [--corpus N] [--variants auto,opencv]

Runs, with each build first on PATH (`--server never`, so neither hands the work to a server):
  * every `sh` example of the README that readme_examples.sh runs on this machine (blocks marked
    `readme-test: skip` are not run, `readme-test: gpu` ones only where the new build finds a
    GPU), each in a fresh copy of samples/ and photos/ (three JPEGs), as tests/scripts/readme_examples.sh
    prepares it; the image files each example writes are compared byte for byte (JSON summaries,
    which hold timings, are not);
  * the benchmark corpus of scripts/make-batch-corpus.sh (N PNGs and N JPEGs of about 2000x2000)
    in batch mode under each filter of FILTERS and each variant of --variants, every output
    compared byte for byte.
Prints one line per difference and a summary; exit 1 when any output's pixels differ or an output
is missing. Files whose bytes differ but whose pixels decode the same (cv2, as stored) are listed
apart, as metadata or encoding changes (a kept dpi, a new chunk), and do not fail the comparison.
It answers issue 46's "no behaviour change" for the outputs a build machine can make; on a GPU
node, --variants with GPU variants compares the kernels' outputs too.
"""
import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FILTERS = ["gauss5", "gaussian:7,3", "sobel-x", "box:15", "unsharp:2,1,1.5", "gaussian:15,5"]
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".pgm", ".ppm", ".pbm", ".pnm",
                  ".exr", ".pfm")


def readme_blocks(path, gpu):
    """The sh blocks readme_examples.sh runs here: (line, body)."""
    blocks, previous, body, lang, start = [], "", None, None, 0
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if body is not None:
                if re.fullmatch(r"```\s*", line):
                    marker = previous if previous.startswith("<!--") else ""
                    if lang == "sh" and "readme-test: skip" not in marker and (gpu or "readme-test: gpu" not in marker):
                        blocks.append((start, "\n".join(body)))
                    body = None
                else:
                    body.append(line)
            elif line.startswith("```"):
                lang, body, start = line[3:].split(" ")[0].strip(), [], number
            elif line.strip():
                previous = line
    return blocks


def with_build(cuconv, work):
    """An environment whose PATH starts with a folder holding `cuconv` (a link to this build)."""
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    link = os.path.join(bin_dir, "cuconv")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(cuconv), link)
    return dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], CUCONV_SERVER="never",
                CUCONV_NO_GPU_WARNING="1")


def images_under(folder):
    found = {}
    for base, _, files in os.walk(folder):
        for name in files:
            if name.lower().endswith(IMAGE_SUFFIXES):
                path = os.path.join(base, name)
                found[os.path.relpath(path, folder)] = path
    return found


def compare_trees(label, old_dir, new_dir, before, excused=()):
    """Image files each run wrote (those not in `before`): the same names, the same bytes. A file
    only the new build wrote is excused when its name is in `excused` (named by a command the old
    build refused). Returns (files compared, differences, files whose bytes alone differ)."""
    old, new = images_under(old_dir), images_under(new_dir)
    differences, bytes_only = [], []
    for name in sorted((set(old) | set(new)) - before):
        if name not in old and os.path.basename(name) in excused:
            continue
        if name not in old or name not in new:
            differences.append(f"{label}: {name} written by {'the new' if name in new else 'the old'} build only")
        elif not filecmp.cmp(old[name], new[name], shallow=False):
            if same_pixels(old[name], new[name]):
                bytes_only.append(f"{label}: {name}: other bytes, the same pixels (metadata or encoding)")
            else:
                differences.append(f"{label}: {name} differs")
    return len((set(old) & set(new)) - before), differences, bytes_only


def same_pixels(a, b):
    """Whether two image files decode (cv2, every channel and depth as stored) to the same pixels;
    False where cv2 is missing or cannot read either."""
    try:
        import cv2
        import numpy
    except ImportError:
        return False
    x, y = cv2.imread(a, cv2.IMREAD_UNCHANGED), cv2.imread(b, cv2.IMREAD_UNCHANGED)
    return x is not None and y is not None and x.dtype == y.dtype and x.shape == y.shape and numpy.array_equal(x, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    parser.add_argument("--samples", default=os.path.join(ROOT, "samples"))
    parser.add_argument("--corpus", type=int, default=12)
    parser.add_argument("--variants", default="auto,opencv")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="cuconv-compare-")
    builds = {"old": with_build(args.old, os.path.join(work, "old")), "new": with_build(args.new, os.path.join(work, "new"))}
    gpu = subprocess.run(["cuconv", os.path.join(args.samples, "camera_crop_40x48.png"), os.path.join(work, "probe.png"),
                          "-f", "box3", "--variant", "fast"], env=builds["new"], capture_output=True).returncode == 0

    fixture = os.path.join(work, "fixture")
    shutil.copytree(args.samples, os.path.join(fixture, "samples"))
    os.makedirs(os.path.join(fixture, "photos"))
    for name in ("coffee", "chelsea", "astronaut"):
        subprocess.run(["cuconv", os.path.join(args.samples, name + ".png"), os.path.join(fixture, "photos", name + ".jpg"),
                        "-f", "1x1:1", "--variant", "opencv", "-q"], env=builds["new"], check=True)
    before = set(images_under(fixture))

    compared, differences, bytes_only, examples, refused = 0, [], [], 0, []
    for line, body in readme_blocks(args.readme, gpu):
        dirs = {}
        # Command by command, so that one the old build does not know (an option added since)
        # leaves the block's other outputs to compare; it is listed, not counted as a difference.
        commands = [c for c in body.splitlines() if c.strip() and not c.lstrip().startswith("#")]
        codes, excused = {}, set()
        for which, env in builds.items():
            dirs[which] = os.path.join(work, which, f"readme-{line}")
            shutil.copytree(fixture, dirs[which])
            codes[which] = [subprocess.run(["bash", "-o", "pipefail", "-c", c], cwd=dirs[which], env=env,
                                           capture_output=True).returncode for c in commands]
        for command, old_code, new_code in zip(commands, codes["old"], codes["new"]):
            if new_code != 0:
                differences.append(f"README line {line}: the new build exited {new_code}: {command}")
            elif old_code == 2:
                refused.append(f"README line {line}: the old build refuses (exit 2, usage): {command}")
                excused.update(command.split())
            elif old_code != 0:
                differences.append(f"README line {line}: the old build exited {old_code}: {command}")
        n, d, b = compare_trees(f"README line {line}", dirs["old"], dirs["new"], before, excused)
        compared, differences, bytes_only, examples = compared + n, differences + d, bytes_only + b, examples + 1

    corpus_outputs = 0
    if args.corpus > 0:
        corpus = os.path.join(work, "corpus")
        for ext in (".png", ".jpg"):
            subprocess.run(["bash", os.path.join(HERE, "make-batch-corpus.sh"), str(args.corpus), corpus + ext,
                            os.path.dirname(os.path.abspath(args.new))],
                           env=dict(builds["new"], EXT=ext, QUALITY="90"), check=True, stdout=subprocess.DEVNULL)
        for variant in args.variants.split(","):
            for spec in FILTERS:
                for ext in (".png", ".jpg"):
                    out = {}
                    for which, env in builds.items():
                        out[which] = os.path.join(work, which, f"corpus-{variant}-{re.sub(r'[^a-z0-9]', '_', spec)}{ext}")
                        done = subprocess.run(["cuconv", "--out-dir", out[which], "-f", spec, "--variant", variant, "-q",
                                               "--codec", "opencv", corpus + ext], env=env, capture_output=True)
                        if done.returncode != 0:
                            differences.append(f"corpus {variant} {spec} {ext}: the {which} build exited {done.returncode}")
                    n, d, b = compare_trees(f"corpus {variant} {spec} {ext}", out["old"], out["new"], set())
                    compared, differences, corpus_outputs = compared + n, differences + d, corpus_outputs + n
                    bytes_only += b

    for line in refused:
        print(line)
    for line in bytes_only:
        print(line)
    for line in differences:
        print(line)
    print(f"compare-builds: {examples} README example(s) and {corpus_outputs} corpus output(s); {compared} image(s) "
          f"compared, {len(differences)} difference(s) of pixels or files, {len(bytes_only)} of bytes only, {len(refused)} command(s) the old build refuses{' (GPU found: GPU examples run)' if gpu else ' (no GPU here)'}")
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
