#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The library speaks in its own terms: no string literal of the library's sources (src/engine,
codec, convolve, filter, gpu, common and include/cuconv) spells a command-line flag (--variant),
and every setting a literal names `like_this` is one the CLI writes as its option
(src/cli/option_names.cpp), so a Python user reads `gpu_memory_limit` and a CLI user --gpu-memory.

    library_flags.py ROOT [--options src/cli/option_names.cpp]

Prints one line per problem and exits 1 when there is any.
"""
import argparse
import os
import re
import sys

LIBRARY = ["src/engine", "src/codec", "src/convolve", "src/filter", "src/gpu", "src/common", "include/cuconv"]
SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".in")
FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
NAME = re.compile(r"`([a-z][a-z0-9_]*)`")
# Sites another change owns, each with the flag it still spells; a site fixed there is reported
# so the entry goes.
PENDING = {}
TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|R"(?P<delim>[^(\s]*)\((?P<raw>.*?)\)(?P=delim)"|'
                   r'"(?P<text>(?:[^"\\\n]|\\.)*)"|\'(?:[^\'\\\n]|\\.)+\'', re.S)


def literals(source):
    """(line, text) of each string literal in C++ `source`, comments and character literals skipped."""
    for m in TOKEN.finditer(source):
        text = m.group("text") if m.group("text") is not None else m.group("raw")
        if text is not None:
            yield source.count("\n", 0, m.start()) + 1, text


def settings_named(options_file):
    """The settings of option_names.cpp's table: {"variant", "gpu_memory_limit", ...}."""
    with open(options_file) as f:
        return set(re.findall(r'\{"([a-z][a-z0-9_]*)",\s*"--?[\w-]+"\}', f.read()))


def problems(root, settings):
    found, pending_seen = [], set()
    for folder in LIBRARY:
        for base, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(base, name)
                shown = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    source = f.read()
                for line, text in literals(source):
                    for flag in FLAG.findall(text):
                        if (shown, flag) in PENDING:
                            pending_seen.add((shown, flag))
                            continue
                        found.append(f"{shown}:{line}: a library message spells the CLI flag {flag} "
                                     f"(name the setting `like_this`; src/cli/option_names.cpp writes it as the flag)")
                    for setting in NAME.findall(text):
                        if setting not in settings:
                            found.append(f"{shown}:{line}: `{setting}` is no setting src/cli/option_names.cpp "
                                         f"writes as an option (add it there, or name a setting it knows)")
    for (shown, flag), why in PENDING.items():
        if (shown, flag) not in pending_seen and os.path.exists(os.path.join(root, shown)):
            print(f"note: {shown} no longer spells {flag}: remove its PENDING entry ({why})")
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--options", help="the CLI's table (default ROOT/src/cli/option_names.cpp)")
    args = parser.parse_args()
    settings = settings_named(args.options or os.path.join(args.root, "src/cli/option_names.cpp"))
    if len(settings) < 10:
        print(f"option_names.cpp: only {len(settings)} settings read; has the table's layout changed?")
        return 1
    found = problems(args.root, settings)
    for line in found:
        print(line)
    print(f"{len(settings)} settings known, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
