#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the CPU suite's libvips cross-check (filters/*.mat through `vips matrixload`, a doctest case
# marked skip so the suite's own entries never pass it silently). Without the vips command it
# exits 77, which CTest reports as Skipped; on CI (CI=true), where scripts/install-deps.sh
# installs libvips-tools, a missing vips fails instead.
# Usage: libvips_test.sh CUCONV_TESTS_BINARY
set -u
if ! vips --version >/dev/null 2>&1; then
  echo "libvips_test: the vips command is not installed (Debian: apt-get install libvips-tools)"
  if [[ "${CI:-}" == true ]]; then
    echo "libvips_test: CI must run this test: scripts/install-deps.sh installs libvips-tools" >&2
    exit 1
  fi
  exit 77
fi
exec "$1" --no-skip=true --test-case='filters/*.mat load in libvips*'
