#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CTest `extending_recipes`: docs/extending.md's file counts are the code's.

    python3 tests/scripts/extending_recipes.py ROOT

Each recipe is checked against the example it is patterned on, found in the code the way the
licence test finds sources: every file under src/, include/, kernels/, cmake/, scripts/ and the
top CMakeLists.txt whose code (comments left out) names the example is a file the recipe must
name, and the recipe's count (in the table, and in its heading) is the number of them:
  - a preset: no source names a preset by name, so the preset is its one file in filters/;
  - a parametric filter: the file that holds `kParametric` and the builders;
  - a GPU variant: `basic`'s kernel, launcher and the lists that name it;
  - a host codec with its own library: TIFF's (tiff_codec, TIFF::TIFF, libtiff);
  - a GPU codec: nvJPEG's files (a file that names nvJPEG but that a codec need not touch is
    listed below with its reason).
Exit 0 when the page and the code agree, 1 otherwise (each difference reported).
"""
import os
import re
import sys

SOURCES = ("src", "include", "kernels", "cmake", "scripts")
# Files whose code names nvJPEG but are no part of adding a GPU codec.
NOT_THE_CODEC = {
    "scripts/jpeg-bench.sh": "a benchmark that runs it",
    "src/common/names.hpp": "the foreign word `nvjpeg` -> `--codec gpu` for the suggestions",
}


def code_files(root):
    files = ["CMakeLists.txt"]
    for top in SOURCES:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            files += [os.path.relpath(os.path.join(folder, n), root) for n in sorted(names)]
    return files


def code_of(root, rel):
    """The file's text without its comment lines and trailing comments (// and #)."""
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (UnicodeDecodeError, IsADirectoryError):
        return ""
    kept = []
    for line in lines:
        if re.match(r"\s*(//|#(?!include|pragma|if|endif|else|define)|\*|/\*)", line):
            continue
        kept.append(re.sub(r"\s#\s.*$", "", re.sub(r"//.*$", "", line)))
    return "\n".join(kept)


def naming(root, files, pattern, by_name=None):
    found = {f for f in files if re.search(pattern, code_of(root, f))}
    if by_name:
        found |= {f for f in files if re.search(by_name, os.path.basename(f))}
    return found


def section(text, heading):
    start = text.index(heading)
    end = re.compile(r"^#{2,3} ", re.M).search(text, start + len(heading))
    return text[start:end.start() if end else len(text)]


def table_count(text, what):
    row = re.search(r"^\| " + re.escape(what) + r" \| ([^|]*)\|", text, re.M)
    return row.group(1).strip() if row else ""


def main():
    root = os.path.abspath(sys.argv[1])
    with open(os.path.join(root, "docs/extending.md"), encoding="utf-8") as f:
        page = f.read()
    files = code_files(root)
    problems = []

    def expect(ok, message):
        if not ok:
            problems.append(message)

    def recipe(name, heading, found, example, table_what, table_text):
        text = section(page, heading)
        for rel in sorted(found):
            template = rel.replace(example, "NAME") if example else rel
            expect(template in text or rel in text, f"{name}: the recipe does not name {template}")
        expect(table_count(page, table_what).startswith(table_text),
               f"{name}: the table says '{table_count(page, table_what)}', the code {len(found)} ('{table_text}')")
        return text

    # A preset: some preset is named by no source, so a new one needs only its file.
    presets = [n[:-4] for n in sorted(os.listdir(os.path.join(root, "filters"))) if n.endswith(".mat")]
    fewest = min(len(naming(root, files, r"\"" + re.escape(p) + r"\"")) for p in presets)
    expect(fewest == 0, f"a preset: every preset is named by {fewest} source(s) besides its file")
    expect(table_count(page, "a preset").startswith("1"), "a preset: the table does not say 1")

    parametric = naming(root, files, r"\bkParametric\b.*=|\bgaussian_kind\b")
    recipe("a parametric filter", "## A parametric filter", parametric, "", "a parametric filter",
           str(len(parametric)))

    variant = naming(root, files, r"\blaunch_basic\b|Variant::basic\b|\"basic\.cuh\"", r"^(launch_)?basic\.cu")
    recipe("a GPU variant", "## A GPU variant", variant, "basic", "a GPU variant", str(len(variant)))

    host = naming(root, files, r"tiff_codec|TIFF::TIFF|find_package\(TIFF|libtiff", r"^tiff_codec\.")
    text = recipe("a host codec", "### A host codec with its own library", host, "tiff",
                  "a host codec with its own library", str(len(host)))
    expect(re.search(rf"\(({len(host)}) files", text) is not None,
           f"a host codec: the heading's count is not the code's {len(host)}")

    nvjpeg = naming(root, files, r"(?i)nvjpeg") - set(NOT_THE_CODEC)
    text = section(page, "### A GPU codec")
    for rel in sorted(nvjpeg):
        expect(rel in text, f"a GPU codec: the recipe does not name nvJPEG's {rel}")
    stated = re.findall(r"nvJPEG's is (\d+)", text)
    expect(stated and all(int(n) == len(nvjpeg) for n in stated),
           f"a GPU codec: the page says nvJPEG's is {stated}, the code names it in {len(nvjpeg)} files")
    own = {f for f in nvjpeg if "nvjpeg" in os.path.basename(f)}
    expect(f"nvJPEG's: {len(own)} of its own, {len(nvjpeg) - len(own)} edited" in table_count(page, "a GPU codec"),
           f"a GPU codec: the table should say nvJPEG's: {len(own)} of its own, {len(nvjpeg) - len(own)} edited")

    for problem in problems:
        print(problem)
    print(f"extending_recipes: parametric {len(parametric)}, variant {len(variant)}, host codec {len(host)}, "
          f"nvJPEG {len(nvjpeg)} files; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
