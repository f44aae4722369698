#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compiles the library's device code for sm_75, the oldest architecture a build on a machine
# without a GPU targets (CMakeLists.txt: 75-real..90), which the ci preset (sm_90 only) never
# compiles. Kernels that use sm_80 PTX (cp.async, L2 cache hints, mma) must keep a path for it:
# README's quickstart builds the release preset, and it failed in ptxas when one did not.
#   scripts/check-archs.sh [BUILD_DIR]     (default build/sm75)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo_root/build/sm75}"
cd "$repo_root"
bash scripts/install-deps.sh >/dev/null
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=75-real >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target cuconv_core
echo "check-archs: the library's device code compiles for sm_75"
