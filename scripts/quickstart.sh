#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README "command 1": install build dependencies, build the release preset, blur a sample, then
# build the Debian package and install it, so that `cuconv`, `man cuconv` and the shell
# completions are there (CUCONV_QUICKSTART_INSTALL=0 skips the package; the last line then says
# how to run the built binary), and install the Python package (`pip install .`, docs/python.md;
# CUCONV_QUICKSTART_PYTHON=0 skips it). Without a GPU cuconv warns and falls back to the CPU; that still
# counts as success here.
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

# The Python package: pip builds the engine again for it (scikit-build-core, build/wheel/).
if [[ "${CUCONV_QUICKSTART_PYTHON:-1}" != 0 ]]; then
  pip_flags=(--quiet --no-build-isolation)  # nanobind and scikit-build-core: scripts/install-deps.sh
  if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pip_flags+=(--break-system-packages)  # Debian's own python3 (PEP 668)
  fi
  python3 -m pip install "${pip_flags[@]}" .
  (cd /tmp && CUCONV_NO_GPU_WARNING=1 python3 -c 'import numpy as np, cuconv
cuconv.convolve(np.zeros((4, 4), np.uint8))
print("python: cuconv", cuconv.__version__, "is installed (docs/python.md)")')
fi

# Install: the .deb of this build (apt-get resolves its Depends; --reinstall replaces an
# earlier build of the same version). Needs root or sudo, like install-deps.sh.
sudo_cmd=()
(( EUID == 0 )) || sudo_cmd=(sudo)
if [[ "${CUCONV_QUICKSTART_INSTALL:-1}" != 0 ]] && { (( EUID == 0 )) || command -v sudo >/dev/null 2>&1; }; then
  bash scripts/package.sh build/release
  deb="$(ls build/release/cuconv_*.deb)"
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --allow-downgrades "./$deb" >/dev/null
  echo "cuconv is installed as $(command -v cuconv) (package $(basename "$deb")): try 'cuconv --help' or 'man cuconv'"
else
  echo "cuconv is not installed; run it as $repo_root/build/release/cuconv (or: bash scripts/package.sh && sudo apt-get install ./dist/cuconv_*.deb)"
fi
