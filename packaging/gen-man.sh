#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the man page cuconv.1 (and cuconv.1.gz) from the built binary's --help with help2man,
# plus the sections of packaging/cuconv.h2m (filter formats, border modes, exit status, examples)
# and BUILT-IN FILTERS, the binary's own --list-filters.
#   packaging/gen-man.sh CUCONV_BIN VERSION OUT_DIR
# The binary runs as plain `cuconv` from PATH, so the synopsis shows no build path; the version
# comes from the caller, so the page does not depend on the build machine's GPU or driver.
set -euo pipefail
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
version="$2"
out_dir="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

shim="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-man.XXXXXX")"
trap 'rm -rf "$shim"' EXIT
ln -s "$bin" "$shim/cuconv"
mkdir -p "$out_dir"
# BUILT-IN FILTERS: `cuconv --list-filters` verbatim (roff-escaped), so presets and parametric
# filters are listed as the binary knows them.
{
  cat "$here/cuconv.h2m"
  printf '\n[BUILT-IN FILTERS]\n.nf\n'
  "$bin" --list-filters | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
  printf '.fi\n'
} >"$shim/cuconv.h2m"
PATH="$shim:$PATH" help2man --no-info --section=1 --version-string="$version" \
  --name="filter images on an NVIDIA GPU with the semantics of OpenCV's cv::filter2D" \
  --include="$shim/cuconv.h2m" --output="$out_dir/cuconv.1.tmp" cuconv
mv "$out_dir/cuconv.1.tmp" "$out_dir/cuconv.1"
gzip -9n -c "$out_dir/cuconv.1" >"$out_dir/cuconv.1.gz"
