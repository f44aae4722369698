#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CTest `coming_from`: every row of docs/coming-from.md's "Checked against the tools" table is
run, the other tool's command and cuconv's on the same image, and the largest difference and the
share of values that differ must be what the row says.

    /usr/bin/python3 tests/scripts/coming_from.py CUCONV ROOT [DOC]

A row is `| tool command | cuconv command | max difference | share differing | ... |`. The tool
command is an ImageMagick 6 `convert ...` (run as Debian's convert-im6.q16 where present, so a
`convert` of another kind earlier on PATH is not taken for it), a `vips ...` or a Python
expression on `img` (cv2, numpy as np) whose result is written as the output. `in.png` is the
table's image, `out.png` a fresh file per command, a bare NAME.mat is filters/NAME.mat or one of
ROW_FILES. Needs python3-opencv, imagemagick and libvips-tools (scripts/install-deps.sh installs
them); without them it exits 77 (Skipped), or 1 on CI (CI=true).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# The .mat files the table names that are not presets (the doc says what each holds).
ROW_FILES = {"row5.mat": "5 1 16 0\n1 4 6 4 1\n"}
TABLE_HEADING = "## Checked against the tools"
IMAGE_RE = re.compile(r"on `(samples/[\w.-]+)`")


def missing_tool(why):
    print(f"coming_from: {why}")
    if os.environ.get("CI") == "true":
        print("coming_from: CI must run this test: scripts/install-deps.sh installs the tools", file=sys.stderr)
        sys.exit(1)
    sys.exit(77)


def table_rows(doc_text):
    """The (line number, cells) of the table under TABLE_HEADING, and the image it names."""
    lines = doc_text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == TABLE_HEADING), None)
    if start is None:
        sys.exit(f"coming_from: no '{TABLE_HEADING}' section")
    image, rows = None, []
    for number in range(start + 1, len(lines)):
        line = lines[number]
        if line.startswith("## "):
            break
        if image is None and IMAGE_RE.search(line):
            image = IMAGE_RE.search(line).group(1)
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            rows.append((number + 1, cells))
    if image is None or not rows:
        sys.exit("coming_from: the section names no image (on `samples/...`) or has no rows")
    return image, rows


def code(cell):
    match = re.fullmatch(r"`([^`]+)`(.*)", cell)
    if not match:
        raise ValueError(f"expected a command in backticks, got {cell!r}")
    return match.group(1)


def main():
    cuconv, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    doc = sys.argv[3] if len(sys.argv) > 3 else os.path.join(root, "docs/coming-from.md")
    try:
        import cv2
        import numpy as np
    except ImportError:
        missing_tool("python3-opencv is not installed (Debian: apt-get install python3-opencv)")
    convert = shutil.which("convert-im6.q16") or shutil.which("convert")
    if not convert or b"ImageMagick" not in subprocess.run([convert, "-version"], capture_output=True).stdout:
        missing_tool("ImageMagick's convert is not installed (Debian: apt-get install imagemagick)")
    if not shutil.which("vips"):
        missing_tool("the vips command is not installed (Debian: apt-get install libvips-tools)")

    image, rows = table_rows(open(doc, encoding="utf-8").read())
    image = os.path.join(root, image)
    work = tempfile.mkdtemp(prefix="coming_from.")
    for name, text in ROW_FILES.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    env = dict(os.environ, CUCONV_NO_GPU_WARNING="1")
    img = cv2.imread(image, cv2.IMREAD_UNCHANGED)
    failures = 0

    def words(command, out):
        argv = []
        for word in shlex.split(command):
            if word == "in.png":
                word = image
            elif word == "out.png":
                word = out
            elif re.fullmatch(r"[\w-]+\.mat", word):
                word = word if word in ROW_FILES else os.path.join(root, "filters", word)
            argv.append(word)
        return argv

    def produce(command, out):
        """Runs a row's command so that it writes `out`; returns an error text or None."""
        if command.startswith("cv2."):
            result = eval(command, {"cv2": cv2, "np": np, "img": img})
            return None if cv2.imwrite(out, result) else "cv2.imwrite failed"
        argv = words(command, out)
        argv[0] = {"convert": convert, "cuconv": cuconv, "vips": "vips"}.get(argv[0])
        if argv[0] is None:
            return f"unknown program in {command!r}"
        run = subprocess.run(argv, capture_output=True, text=True, cwd=work, env=env)
        return None if run.returncode == 0 else f"exit {run.returncode}: {run.stderr.strip()[:300]}"

    for index, (line, cells) in enumerate(rows):
        try:
            tool, ours = code(cells[0]), code(cells[1])
            want_max, want_share = int(cells[2]), cells[3]
        except (ValueError, IndexError) as error:
            print(f"FAIL line {line}: {error}")
            failures += 1
            continue
        outputs = [os.path.join(work, f"{index}-{side}.png") for side in ("tool", "cuconv")]
        errors = [produce(tool, outputs[0]), produce(ours, outputs[1])]
        if any(errors):
            print(f"FAIL line {line}: {tool} / {ours}: {errors}")
            failures += 1
            continue
        a, b = (cv2.imread(out, cv2.IMREAD_UNCHANGED) for out in outputs)
        if a is None or b is None or a.shape != b.shape:
            print(f"FAIL line {line}: outputs differ in shape: {getattr(a, 'shape', None)} {getattr(b, 'shape', None)}")
            failures += 1
            continue
        difference = np.abs(a.astype(np.int64) - b.astype(np.int64))
        got_max = int(difference.max())
        got_share = f"{(difference > 0).mean() * 100:.1f}%"
        verdict = "ok" if (got_max, got_share) == (want_max, want_share) else "FAIL"
        failures += verdict == "FAIL"
        print(f"{verdict} line {line}: max {got_max} on {got_share} (table: {want_max} on {want_share}): "
              f"{tool}  ~  {ours}")
    print(f"coming_from: {len(rows)} rows on {os.path.relpath(image, root)}, {failures} failure(s)")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
