#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI check: clang-tidy (the checks of the repository's .clang-tidy) on the C++ files (not .cu) that
# recent commits changed, with build/ci's compile_commands.json; fails on any warning.
#   scripts/tidy.sh [REF]     files changed since REF (a commit, tag or branch) and not committed yet
#   scripts/tidy.sh A..B      files changed by the commits A..B (git log's range) only
#   scripts/tidy.sh           files changed by the last 10 commits and not committed yet
#   scripts/tidy.sh --all     every C++ file of the compile database (long: ~12 s a file a core)
# A clean clone knows no earlier CI run to diff against, so the default is the last 10 commits,
# leaving out those whose subject starts with 'format:' (the formatter's whole-tree commits change
# no logic). A header is checked through a compiled .cpp (its own, else one that includes it).
# At most TIDY_MAX_FILES files (default 40, about 4 minutes on 2 cores) are checked, the most
# recently changed first; the rest are named. Files outside the compile database (a benchmark not
# built, the fuzz targets) are named and skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=build/ci
database="$build/compile_commands.json"
max_files="${TIDY_MAX_FILES:-40}"
if ! command -v clang-tidy > /dev/null; then
  sudo_cmd=(); (( EUID == 0 )) || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-tidy > /dev/null 2>&1 ||
    { "${sudo_cmd[@]}" apt-get update -qq > /dev/null &&
      "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-tidy > /dev/null; }
fi
[[ -f "$database" ]] || { echo "tidy: $database missing: configure the ci preset first (cmake --preset ci)"; exit 1; }

# The changed files, most recent first, one per line.
changed() {
  if [[ "${1:-}" == "--all" ]]; then
    python3 -c 'import json,sys; print("\n".join(e["file"] for e in json.load(open(sys.argv[1]))))' "$database" |
      sed "s#^$PWD/##"
    return
  fi
  if [[ "${1:-}" == *..* ]]; then
    git log --format= --name-only "$1"
    return
  fi
  git diff --name-only HEAD  # not committed yet
  if [[ -n "${1:-}" ]]; then
    git log --format= --name-only "$1..HEAD"
  else
    local commits
    commits=$(git rev-list --max-count=10 HEAD)
    for commit in $commits; do
      git log -1 --format=%s "$commit" | grep -q '^format:' && continue
      # A shallow clone's oldest commit shows no parent: diffed against nothing, it would name
      # every file, so it is left out.
      git rev-parse -q --verify "$commit^" > /dev/null || continue
      git diff-tree --no-commit-id --name-only -r "$commit"
    done
  fi
}

# A compiled .cpp for each changed C++ file, first come first kept. A header is checked through
# its .cpp of the same name, else the first compiled .cpp that includes it (alone it has no compile
# command, and a guessed one misses its include paths); then only the header's findings count
# (clang-tidy --line-filter), unless that .cpp changed too.
mapfile -t in_database < <(python3 -c 'import json,sys; print("\n".join(e["file"] for e in json.load(open(sys.argv[1]))))' "$database" | sed "s#^$PWD/##")
declare -A compiled=() whole=() through=()
for file in "${in_database[@]}"; do compiled["$file"]=1; done
files=() skipped=()
keep() { [[ -n "${whole[$1]:-}${through[$1]:-}" ]] || files+=("$1"); }
while IFS= read -r file; do
  [[ "$file" =~ \.(cpp|hpp|h)$ && "$file" != third_party/* && -f "$file" ]] || continue
  if [[ "$file" == *.cpp ]]; then
    if [[ -z "${compiled[$file]:-}" ]]; then skipped+=("$file"); continue; fi
    keep "$file"
    whole["$file"]=1
    continue
  fi
  target="${file%.*}.cpp"
  if [[ -z "${compiled[$target]:-}" ]]; then
    target=$(grep -lE "#include [<\"](.*/)?$(basename "$file")[>\"]" "${in_database[@]}" 2> /dev/null | head -1 || true)
    if [[ -z "$target" ]]; then skipped+=("$file"); continue; fi
  fi
  [[ "${through[$target]:-}" == *"\"$file\""* ]] && continue
  keep "$target"
  through["$target"]+="${through[$target]:+,}{\"name\":\"$file\"}"
done < <(changed "${1:-}")

(( ${#skipped[@]} == 0 )) || printf 'tidy: not in %s, not checked: %s\n' "$database" "${skipped[*]}"
if (( ${#files[@]} > max_files )); then
  echo "tidy: ${#files[@]} files changed; checking the $max_files most recent (TIDY_MAX_FILES), not: ${files[*]:$max_files}"
  files=("${files[@]:0:$max_files}")
fi
(( ${#files[@]} > 0 )) || { echo "tidy: no changed C++ files"; exit 0; }
echo "tidy: ${#files[@]} file(s), $(nproc) at a time ($(clang-tidy --version | grep -o 'version [0-9.]*'))"
start=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for file in "${files[@]}"; do
  filter=""
  [[ -n "${whole[$file]:-}" ]] || filter="[${through[$file]}]"
  printf '%s\0%s\0' "$file" "$filter"
done |
  xargs -0 -n 2 -P "$(nproc)" bash -c 'clang-tidy -p "$0" --quiet --warnings-as-errors="*" ${2:+--line-filter="$2"} "$1"' \
    "$build" > "$log" 2> /dev/null || status=$?
grep -E ': (warning|error):' "$log" | sort -u || true
if (( status != 0 )); then
  echo "tidy: FAILED (the warnings above; fix them or add // NOLINT(check): reason) in $((SECONDS - start)) s"
  exit 1
fi
echo "tidy: ${#files[@]} file(s) clean in $((SECONDS - start)) s"
