#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI check of `cmake --install`: installs an existing build into a fresh prefix, checks the tree
# (binary, headers, library, CMake package, man page, completions, presets), then configures,
# builds and runs tests/consumer against it with find_package(cuconv) and runs the installed
# binary on a sample. Last, configures tests/consumer/subproject: cuconv under add_subdirectory
# builds no tests, benchmarks or tools.
#   scripts/test-install.sh [BUILD_DIR]     (default build/ci; build it first: scripts/test.sh)
set -euo pipefail
# The installed cuconv runs in-process: a user's `cuconv serve` on the default socket (another
# build) must not answer for it.
export CUCONV_SERVER=never

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo_root/build/ci}"
[[ -f "$build_dir/CMakeCache.txt" ]] || { echo "test-install: no build in '$build_dir' (run scripts/test.sh first)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --build "$build_dir" -j"$(nproc)" --target cuconv cuconv_core cuconv_opencv_codecs cuconv_docs
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log"

fail=0
for f in bin/cuconv libexec/cuconv/cuconv-engine libexec/cuconv/libcuconv-opencv-codecs.so lib/libcuconv_opencv_codecs.a \
         include/cuconv/convolve.hpp include/cuconv/filter.hpp include/cuconv/version.hpp \
         lib/libcuconv.a lib/cmake/cuconv/cuconvConfig.cmake lib/cmake/cuconv/cuconvConfigVersion.cmake \
         lib/cmake/cuconv/cuconvTargets.cmake lib/cmake/cuconv/FindOpenCVModules.cmake \
         share/man/man1/cuconv.1.gz share/bash-completion/completions/cuconv \
         share/zsh/vendor-completions/_cuconv share/cuconv/filters/gauss5.mat; do
  if [[ ! -e "$prefix/$f" ]]; then
    echo "test-install: missing from the install tree: $f" >&2
    fail=1
  fi
done
# Nothing that is only for building or testing cuconv may be installed.
if find "$prefix" -name '*_tests' -o -name 'cuconv_bench' -o -name 'cuconv_make_corpus' | grep -q .; then
  echo "test-install: test or benchmark binaries were installed:" >&2
  find "$prefix" -name '*_tests' -o -name 'cuconv_bench' -o -name 'cuconv_make_corpus' >&2
  fail=1
fi
(( fail == 0 )) || exit 1

# The consumer: a C++-only project, configured from nothing but the prefix.
cmake -S "$repo_root/tests/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$work/consumer"
"$work/consumer/cuconv_consumer"

# The installed binary, run from the prefix (no build-tree paths).
"$prefix/bin/cuconv" --version
"$prefix/bin/cuconv" "$repo_root/samples/camera.png" "$work/camera_gauss5.png" --filter gauss5 -q
[[ -s "$work/camera_gauss5.png" ]] || { echo "test-install: installed cuconv wrote nothing" >&2; exit 1; }

cmake -S "$repo_root/tests/consumer/subproject" -B "$work/subproject" -G Ninja \
      -DCUCONV_SOURCE_DIR="$repo_root" -DCMAKE_CUDA_ARCHITECTURES=90 >"$work/subproject.log" ||
  { cat "$work/subproject.log" >&2; echo "test-install: cuconv as a subproject failed to configure" >&2; exit 1; }
echo "test-install: OK (prefix tree, find_package(cuconv) consumer, installed binary, subproject)"
