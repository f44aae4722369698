#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A benchmark corpus for batch mode: N RGB images of about 2000x2000 pixels derived from the
# sample images (crop, flip, resize, light noise; the same images on every machine).
#
#   scripts/make-batch-corpus.sh N DIR [BIN_DIR]
#
#   BIN_DIR  folder holding cuconv_make_corpus: an unpacked bundle's bin/ or a build folder
#            (default: the bundle's bin/ beside this script, else build/ci, build/h100, build/release)
#   SIZE     approximate side in pixels (default 2000);  EXT  .png (default), .jpg, .tif or .bmp
#   QUALITY  JPEG quality for EXT=.jpg (default 95)
#
# Images already in DIR are kept, so a rerun only adds what is missing. Runs on all cores.
set -euo pipefail

if (( $# < 2 )); then
  echo "usage: $0 N DIR [BIN_DIR]" >&2
  exit 2
fi
count="$1" dir="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"   # the repository, or the unpacked bundle

tool=""
for candidate in ${3:+"$3/cuconv_make_corpus"} "$root/bin/cuconv_make_corpus" \
                 "$root/build/ci/cuconv_make_corpus" "$root/build/h100/cuconv_make_corpus" \
                 "$root/build/release/cuconv_make_corpus"; do
  if [[ -x "$candidate" ]]; then
    tool="$candidate"
    break
  fi
done
if [[ -z "$tool" ]]; then
  echo "make-batch-corpus: cuconv_make_corpus not found (give BIN_DIR, or build: cmake --build --preset ci)" >&2
  exit 2
fi
samples="${CUCONV_SAMPLES:-$root/samples}"

exec "$tool" --count "$count" --out "$dir" --samples "$samples" --size "${SIZE:-2000}" --ext "${EXT:-.png}" \
  --quality "${QUALITY:-95}"
