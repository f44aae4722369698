#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CTest `readme_options`: README.md's options table (under "## Usage") names every option of
`cuconv --help`, and `cuconv --help` every option of the table.

    python3 tests/scripts/readme_options.py CUCONV README.md

An option of the help page is a name on a line that starts with two blanks and a dash
("  -f, --filter SPEC   text"); an option of the table is a `-x` or `--name` in a code span of a
row's first cell. Exit 0 when both lists are equal, 1 otherwise (each difference is printed).
"""
import re
import subprocess
import sys

NAME = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]*")


def help_options(cuconv):
    text = subprocess.run([cuconv, "--help"], capture_output=True, text=True, check=True,
                          env={"CUCONV_SERVER": "never", "PATH": "/usr/bin:/bin"}).stdout
    found = set()
    for line in text.splitlines():
        if line.startswith("  -"):
            head = re.split(r"\s{2,}", line.strip())[0]
            found.update(word.rstrip(",") for word in head.split() if NAME.match(word))
    return found


def table_options(readme):
    lines = open(readme, encoding="utf-8").read().splitlines()
    start = lines.index("## Usage")
    found = set()
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("| `"):
            first_cell = line.split(" | ")[0]
            for span in re.findall(r"`([^`]+)`", first_cell):
                found.update(NAME.match(word).group(0) for word in span.replace("[", " ").split()
                             if NAME.match(word))
    return found


def main():
    cuconv, readme = sys.argv[1], sys.argv[2]
    in_help, in_table = help_options(cuconv), table_options(readme)
    if len(in_help) < 10:
        print(f"readme_options: only {len(in_help)} options read from --help: {sorted(in_help)}")
        return 1
    missing, extra = sorted(in_help - in_table), sorted(in_table - in_help)
    for name in missing:
        print(f"README.md's options table lacks {name} (in cuconv --help)")
    for name in extra:
        print(f"README.md's options table has {name}, which cuconv --help does not list")
    print(f"readme_options: {len(in_help)} options in --help, {len(in_table)} in the table, "
          f"{len(missing) + len(extra)} difference(s)")
    return 1 if missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
