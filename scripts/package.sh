#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the Debian package: dist/cuconv_<version>_amd64.deb (cpack -G DEB; packaging/CPack.cmake).
#   scripts/package.sh [PRESET|BUILD_DIR]
# PRESET (default: release) is configured and built first; an existing BUILD_DIR (one holding a
# CMakeCache.txt, e.g. build/ci, which CI reuses) is brought up to date and packaged as it is. The
# package holds the device code the build was configured for (release: sm_75..sm_90 + PTX, or the
# GPU of the build machine; ci: sm_90 only).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
target="${1:-release}"

bash scripts/install-deps.sh
if [[ -f "$target/CMakeCache.txt" ]]; then
  build_dir="$(cd "$target" && pwd)"
else
  cmake --preset "$target"
  build_dir="$repo_root/build/$target"
fi
# Only what the package holds (the binary, its man page and completions), not the test suites.
cmake --build "$build_dir" -j"$(nproc)" --target cuconv cuconv_docs

rm -f "$build_dir"/cuconv_*.deb
(cd "$build_dir" && cpack -G DEB)
mkdir -p dist
deb="$(ls "$build_dir"/cuconv_*.deb)"
cp "$deb" dist/
echo "package: dist/$(basename "$deb")"
