#!/usr/bin/env bash
# README "command 1": install build dependencies, build the release preset and blur a sample.
# Without a GPU cuconv warns and falls back to the CPU; that still counts as success here.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

bash scripts/install-deps.sh

# With no GPU visible the binary can only take the CPU path here, so compiling device code for
# five architectures (the release default without a GPU) would only cost time.
if [[ -z "${CUDAARCHS:-}" ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "quickstart: no GPU visible: building device code for sm_90 only (set CUDAARCHS to override)"
  export CUDAARCHS=90
fi
cmake --preset release
cmake --build --preset release -j

out_dir="$repo_root/build/quickstart"
out="$out_dir/coffee_gauss5.png"
mkdir -p "$out_dir"
build/release/cuconv samples/coffee.png "$out" --filter gauss5 -v --overwrite

# cuconv's exit status is checked by set -e; also make sure it really wrote the file.
if [[ ! -s "$out" ]]; then
  echo "quickstart: cuconv exited 0 but $out was not written" >&2
  exit 1
fi
echo "output: $out"
