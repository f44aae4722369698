#!/usr/bin/env bash
# README "command 2" and CI entry point: install dependencies, build the ci preset, run ctest.
# The exit status is ctest's (GPU suites report "skipped" via exit code 77 on GPU-less runners).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh

cmake --preset ci
cmake --build --preset ci -j"$(nproc)"
exec ctest --preset ci
