#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README "command 2" and CI entry point: install dependencies, build a preset, run ctest.
#   scripts/test.sh [PRESET]    PRESET: ci (default) or asan (host code under ASan + UBSan)
# The exit status is ctest's (GPU suites report "skipped" via exit code 77 on GPU-less runners).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset="${1:-ci}"

bash scripts/install-deps.sh

# The ci build also makes the Python package's module, so ctest runs its pytest suite
# (python_pytest); the sanitizer build leaves it out (an ASan module cannot load into python3).
python_option=()
[[ "$preset" == asan ]] || python_option=(-DCUCONV_PYTHON=ON)
cmake --preset "$preset" "${python_option[@]}"
cmake --build --preset "$preset" -j"$(nproc)"
# One test a core (the test cases are independent processes; CI has 2 cores).
exec ctest --preset "$preset" -j"$(nproc)"
