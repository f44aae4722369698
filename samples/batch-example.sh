#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Example: blur every image of a folder with cuconv, one file at a time.
#
#   batch-example.sh [IN_DIR] [OUT_DIR]
#
#   IN_DIR   folder with images (default: the folder this script lives in)
#   OUT_DIR  where results go, same file names and extensions (default: ./cuconv-out)
#   CUCONV   cuconv executable to use (default: `cuconv` on PATH)
#
# Exits non-zero when any image failed; the others are still processed. Outputs that exist already
# are kept (a second run skips them), so the script can be run again after an interruption.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
in_dir="${1:-$script_dir}"
out_dir="${2:-./cuconv-out}"
cuconv="${CUCONV:-cuconv}"

if ! command -v "$cuconv" >/dev/null 2>&1; then
  echo "error: cuconv executable '$cuconv' not found (set CUCONV=/path/to/cuconv)" >&2
  exit 2
fi
if [[ ! -d "$in_dir" ]]; then
  echo "error: input folder '$in_dir' does not exist" >&2
  exit 2
fi
mkdir -p "$out_dir"
# Same folder in and out would overwrite the originals.
if [[ "$(cd "$in_dir" && pwd -P)" == "$(cd "$out_dir" && pwd -P)" ]]; then
  echo "error: output folder must differ from the input folder" >&2
  exit 2
fi

# Extensions OpenCV's imgcodecs can usually read and write; matched case-insensitively.
shopt -s nullglob nocaseglob
images=("$in_dir"/*.{png,jpg,jpeg,tif,tiff,bmp,pgm,ppm,pnm,webp})
shopt -u nocaseglob

if (( ${#images[@]} == 0 )); then
  echo "no images found in '$in_dir'" >&2
  exit 1
fi

ok=0
failed=0
for in in "${images[@]}"; do
  out="$out_dir/$(basename "$in")"   # same name, so the extension (and format) is kept
  # `|| rc=$?` keeps set -e from stopping the loop on the first failure.
  rc=0
  # --skip-existing: a re-run leaves the results of the last run alone and succeeds.
  "$cuconv" "$in" "$out" --filter gauss5 --skip-existing || rc=$?
  if (( rc == 0 )); then
    echo "ok    $in -> $out"
    ok=$((ok + 1))
  else
    echo "FAIL  $in (exit $rc)" >&2
    failed=$((failed + 1))
  fi
done

echo "done: $ok ok, $failed failed, output in $out_dir"
(( failed == 0 ))
