#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CTest `doc_references`: every file, section and option the docs name exists.

    python3 tests/scripts/doc_references.py ROOT [--cuconv BIN | --help-text FILE] [--pending FILE] [DOC...]

Reads README.md, docs/*.md and the current results under bench/results/ (its README, summaries
and kernel notes; not history/, which is kept as written) of the source tree ROOT, or the DOCs
given, and reports, with file:line:
  - a repository path (src/..., docs/..., scripts/..., tests/..., kernels/..., filters/...,
    packaging/..., include/..., cmake/..., bench/..., tools/..., samples/...; a `*` matches any
    name, `{a,b}` expands; a path with NAME in it is a template and not checked) that names no
    file or folder of the tree (not in bench/results/benchmarks.md and gpu-test-log.md, which
    quote run folders no longer kept, as they were named when measured);
  - a markdown link to a local file that does not exist, or to a `#section` that no heading
    (GitHub's anchor rule) or `<a id>` of that file makes;
  - a cuconv option (`--name`) after `cuconv` in a code span or block that `cuconv --help` does
    not list (--cuconv runs it, --help-text reads its output from a file; without either, the
    "--name" strings of src/cli/*.cpp stand in for it); and an option leading a code span
    (`--name VALUE`) that is neither cuconv's nor named in the project's own programs (scripts/,
    bench/, tools/). Another program's option is written with the program: `ncu --section X`.
It reads the comments of the sources under src/, kernels/, include/, tests/ and bench/ too (C++
and CUDA `//` and `/* */`, Python, shell and CMake `#`; never string literals, which may be test
data; not tests/scripts/readme_fixtures/, whose files are wrong on purpose), or of a SOURCE given among
the DOCs, and reports a repository path in a comment that names no file or folder, and a cited
section (`docs/batch.md, "Summary"`) that no heading of that page holds.
--pending FILE: paths (one a line, # comments) that land with the same merge and may be named
before they exist; one that exists is reported, so the list empties itself.
Exit 0 when nothing is found, 1 otherwise.
"""
import argparse
import glob
import io
import os
import re
import subprocess
import sys
import tokenize
import unicodedata

PREFIXES = "src|docs|scripts|tests|kernels|filters|packaging|include|cmake|bench|tools|samples"
PATH_RE = re.compile(r"(?<![\w/.$~-])(?:" + PREFIXES + r")/[A-Za-z0-9_.*{},/+-]*")
LINK_RE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
ANCHOR_TAG_RE = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
CUCONV_RE = re.compile(r"(?<![\w./-])(?:[\w./$-]*/)?cuconv(?=\s)")
OPTION_RE = re.compile(r"^--[A-Za-z][A-Za-z0-9-]*")
# Results that quote run folders and files no longer kept, as they were named when measured.
RESULTS_QUOTING_OLD_PATHS = {"bench/results/benchmarks.md", "bench/results/gpu-test-log.md"}
# What may stand before a command: nothing, a separator, a prompt, a wrapper, an environment setting.
COMMAND_START = re.compile(r"(?:^|[|;&(`'\"$]|\b(?:sudo|time|exec|srun|xargs|parallel|nice|env)|\w+=\S*)\s*$")
SEGMENT_END = re.compile(r"\||;|&&|\)|`|\$\(")


# Sources whose comments are read, and how a comment starts in each.
SOURCE_DIRS = ("src", "kernels", "include", "tests", "bench")
C_LIKE = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".c", ".cc", ".in")
HASH_LIKE = (".sh", ".cmake", ".txt")
RAW_PREFIX = re.compile(r"(?<!\w)(?:u8|u|U|L)?R$")
# A comment citing a page's section: `docs/batch.md, "Summary"` (the section's title or a part of it).
CITATION_RE = re.compile(r"((?:docs|bench/results)/[\w./-]+\.md), [\"']([^\"']+)[\"']")
# Files that are wrong on purpose: the checkers' own negative fixtures.
NOT_READ = ("tests/scripts/readme_fixtures/",)


def c_comments(text):
    """(line number, text) of each `//` and `/* */` comment of C++ or CUDA source; string and
    character literals (raw strings too) are skipped, so test data never counts as a comment."""
    i, line, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield line, text[i + 2:end]
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for offset, part in enumerate(text[i + 2:end].split("\n")):
                yield line + offset, part
            line += text.count("\n", i, end)
            i = end + 2
        elif ch == '"' and RAW_PREFIX.search(text[max(0, i - 4):i]):  # R"x(...)x"
            delim = text[i + 1:text.find("(", i)]
            end = text.find(")" + delim + '"', i)
            end = n if end < 0 else end + len(delim) + 2
            line += text.count("\n", i, end)
            i = end
        elif ch == '"' or ch == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i + 1  # a ' after a digit or name is a digit separator (1'000), not a literal
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


def hash_comments(text):
    """(line number, text) of each `#` comment of a shell or CMake file: a # at the start of a
    line or after a blank, outside quotes ($# and ${#x} are not comments)."""
    for number, line in enumerate(text.splitlines(), 1):
        quote = None
        for i, ch in enumerate(line):
            if quote:
                if ch == "\\":
                    continue
                if ch == quote and line[i - 1] != "\\":
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
                yield number, line[i + 1:]
                break


def python_comments(text):
    """(line number, text) of each `#` comment of a Python file, as Python's tokenizer sees it."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string[1:]
    except (tokenize.TokenError, SyntaxError):
        return


def comments_of(rel, text):
    if rel.endswith(".py"):
        return python_comments(text)
    if rel.endswith(C_LIKE):
        return c_comments(text)
    if rel.endswith(HASH_LIKE) or os.path.basename(rel) == "CMakeLists.txt":
        return hash_comments(text)
    return iter(())


def is_source(rel):
    return rel.endswith(C_LIKE + (".py", ".sh", ".cmake")) or os.path.basename(rel) == "CMakeLists.txt"


def sources(root):
    """The sources whose comments are read (a git checkout's tracked and new files; else a walk)."""
    found = []
    for top in SOURCE_DIRS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "corpus")
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(folder, name), root)
                if is_source(rel) and not rel.startswith(NOT_READ):
                    found.append(rel)
    return found


def cited_section(path, section):
    """Whether a heading of the markdown file holds `section` (letter case and markup aside)."""
    with open(path, encoding="utf-8") as f:
        headings = [re.sub(r"`|\*\*", "", line).lower() for _, line, in_code in split_blocks(f.read())
                    if not in_code and re.match(r"#{1,6}\s", line)]
    wanted = re.sub(r"`|\*\*", "", section).lower()
    return any(wanted in heading for heading in headings)


def slug(heading):
    """GitHub's anchor for a heading: lower case; letters, digits, '_', '-' and spaces kept (the
    spaces as '-'); markup and every other character dropped."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LM" or cat == "Nd":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def split_blocks(text):
    """(line number, line, inside a fenced code block) for each line."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(```+|~~~+)", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[:3]
            elif stripped.startswith(fence):
                fence = None
            yield number, line, True
            continue
        yield number, line, fence is not None


class Anchors:
    def __init__(self):
        self.cache = {}

    def of(self, path):
        if path not in self.cache:
            anchors, seen = set(), {}
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for _, line, in_code in split_blocks(text):
                if in_code:
                    continue
                heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if heading:
                    base = slug(heading.group(1))
                    count = seen.get(base, 0)
                    seen[base] = count + 1
                    anchors.add(base if count == 0 else f"{base}-{count}")
                anchors.update(ANCHOR_TAG_RE.findall(line))
            self.cache[path] = anchors
        return self.cache[path]


def expand(path):
    """`a/{b,c}.md` -> [`a/b.md`, `a/c.md`]."""
    brace = re.search(r"\{([^{}]*)\}", path)
    if not brace:
        return [path]
    return [p for part in brace.group(1).split(",")
            for p in expand(path[:brace.start()] + part + path[brace.end():])]


def project_options(root):
    """Every --name the project's scripts and benchmark programs mention."""
    found = set()
    for pattern in ("scripts/*.sh", "scripts/*.py", "bench/*.cpp", "bench/*.cu", "tools/*.cpp"):
        for source in glob.glob(pattern, root_dir=root):
            with open(os.path.join(root, source), encoding="utf-8") as f:
                found.update(re.findall(r"(?<![\w-])--[A-Za-z][A-Za-z0-9-]*", f.read()))
    return found


def known_options(args, root):
    if args.cuconv:
        text = subprocess.run([args.cuconv, "--help"], capture_output=True, text=True, check=True).stdout
        # `cuconv serve` has options of its own (src/cli/serve_command.cpp).
        text += subprocess.run([args.cuconv, "serve", "--help"], capture_output=True, text=True).stdout
    elif args.help_text:
        with open(args.help_text, encoding="utf-8") as f:
            text = f.read()
    else:  # the option strings of the command-line sources, and CLI11's own --help
        text = "--help\n"
        for source in sorted(glob.glob(os.path.join(root, "src", "cli", "*.cpp"))):
            with open(source, encoding="utf-8") as f:
                text += "\n".join(re.findall(r"\"([^\"]*)\"", f.read())) + "\n"
    return set(re.findall(r"(?<![\w-])--[A-Za-z][A-Za-z0-9-]*", text))


def leading_option(span):
    """The option a code span starts with (`--name VALUE`), if any."""
    token = OPTION_RE.match(span.lstrip())
    return token.group(0) if token else None


def options_in(code):
    """The --options of every cuconv command in a line of code."""
    found = []
    for command in CUCONV_RE.finditer(code):
        if not COMMAND_START.search(code[:command.start()]):
            continue  # `cuconv` as a word, or an argument of another program's option
        rest = code[command.end():]
        end = SEGMENT_END.search(rest)
        for token in (rest[:end.start()] if end else rest).split():
            option = OPTION_RE.match(token.strip("'\""))
            if option:
                found.append(option.group(0))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root")
    parser.add_argument("--cuconv")
    parser.add_argument("--help-text")
    parser.add_argument("--pending")
    parser.add_argument("docs", nargs="*")
    args = parser.parse_intermixed_args()
    root = os.path.abspath(args.root)
    docs = args.docs or (["README.md"] + sorted(glob.glob("docs/*.md", root_dir=root)) +
                         sorted(glob.glob("bench/results/*.md", root_dir=root)) +
                         sorted(glob.glob("bench/results/kernel-notes/*.md", root_dir=root)))
    options = known_options(args, root)
    others = project_options(root)
    pending = set()
    if args.pending:
        with open(args.pending, encoding="utf-8") as f:
            pending = {line.split("#")[0].strip().rstrip("/") for line in f} - {""}
    anchors = Anchors()
    problems = []

    def exists(rel):
        rel = rel.rstrip("/")
        return bool(glob.glob(rel, root_dir=root)) if "*" in rel else os.path.exists(os.path.join(root, rel))

    for rel in sorted(pending):
        if exists(rel):
            problems.append(f"{args.pending}: {rel} exists now: take it off the pending list")

    def check_paths(where, line):
        for match in PATH_RE.finditer(re.sub(r"\]\([^)]*\)", "]()", line)):
            raw = match.group(0).rstrip(".,:;")
            for rel in expand(raw):
                rel = rel.rstrip(".,:;")
                if "NAME" in rel:  # a template: kernels/NAME.cuh
                    continue
                if not exists(rel) and rel.rstrip("/") not in pending:
                    problems.append(f"{where}: no such file or folder: {rel}")

    code = [doc for doc in docs if is_source(doc)] if args.docs else sources(root)
    docs = [doc for doc in docs if not is_source(doc)]
    for source in code:
        with open(os.path.join(root, source), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for number, comment in comments_of(source, text):
            check_paths(f"{source}:{number}", comment)
            for cited, section in CITATION_RE.findall(comment):
                if os.path.exists(os.path.join(root, cited)) and not cited_section(os.path.join(root, cited), section):
                    problems.append(f"{source}:{number}: no section \"{section}\" in {cited}")

    for doc in docs:
        doc_path = os.path.join(root, doc)
        with open(doc_path, encoding="utf-8") as f:
            text = f.read()
        for number, line, in_code in split_blocks(text):
            where = f"{doc}:{number}"
            if doc not in RESULTS_QUOTING_OLD_PATHS:
                check_paths(where, line)
            if not in_code:
                for target in LINK_RE.findall(line):
                    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                        continue
                    file_part, _, anchor = target.partition("#")
                    linked = os.path.normpath(os.path.join(os.path.dirname(doc_path), file_part)) if file_part else doc_path
                    rel_linked = os.path.relpath(linked, root)
                    if not os.path.exists(linked):
                        if rel_linked not in pending:
                            problems.append(f"{where}: link to a missing file: {target}")
                        continue
                    if anchor and linked.endswith(".md") and anchor not in anchors.of(linked):
                        problems.append(f"{where}: no section #{anchor} in {rel_linked}")
            spans = [line] if in_code else re.findall(r"`([^`]+)`", line)
            for span in spans:
                for option in options_in(span):
                    if option not in options:
                        problems.append(f"{where}: cuconv has no option {option}")
                lead = None if in_code else leading_option(span)
                if lead and lead not in options and lead not in others:
                    problems.append(f"{where}: neither cuconv nor a project program has option {lead}")
    problems = list(dict.fromkeys(problems))
    for problem in problems:
        print(problem)
    print(f"doc_references: {len(docs)} docs, {len(code)} sources, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
