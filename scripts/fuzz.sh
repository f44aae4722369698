#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets of tests/fuzz with clang and runs them for SECONDS in all (default
# 100), split evenly between them, each from its seed corpus in tests/fuzz:
#   fuzz_filter_parser (corpus), fuzz_cli_options (corpus_cli), fuzz_image_header
#   (corpus_image_header), fuzz_jpeg_markers (corpus_jpeg_markers), fuzz_metadata (corpus_metadata),
#   fuzz_serve_protocol (corpus_serve), fuzz_serve_session (corpus_serve: a real server driven by a
#   client's fuzzed session).
# A crash leaves crash-* in build/fuzz/findings, prints the command that replays it, and fails.
#   scripts/fuzz.sh --seeds   rewrites the image seed corpora from samples/ (tests/fuzz/make_seeds.cpp)
#   scripts/fuzz.sh 60 fuzz_metadata   one target only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi
cmake -S tests/fuzz -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$(nproc)"
mkdir -p build/fuzz/findings

if [[ "${1:-}" == --seeds ]]; then
  build/fuzz/make_seeds samples tests/fuzz
  exit 0
fi
seconds="${1:-100}"
only="${2:-}"

# run TARGET SEEDS SECONDS: the working corpus grows in build/; the seeds in the repository stay small.
run() {
  local target=$1 seeds=$2 budget=$3
  mkdir -p "build/fuzz/$seeds"
  cp -n "tests/fuzz/$seeds"/* "build/fuzz/$seeds/" 2>/dev/null || true
  echo "fuzz.sh: $target for $budget s"
  if ! "build/fuzz/$target" -max_total_time="$budget" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="build/fuzz/findings/$target-" "build/fuzz/$seeds"; then
    echo "fuzz.sh: $target failed; replay each finding with:" >&2
    for finding in build/fuzz/findings/"$target"-*; do
      [[ -e "$finding" ]] && echo "  build/fuzz/$target $finding" >&2
    done
    exit 1
  fi
}
targets=(fuzz_filter_parser:corpus fuzz_cli_options:corpus_cli fuzz_image_header:corpus_image_header
         fuzz_jpeg_markers:corpus_jpeg_markers fuzz_metadata:corpus_metadata
         fuzz_serve_protocol:corpus_serve fuzz_serve_session:corpus_serve)
[[ -n "$only" ]] && targets=("$(printf '%s\n' "${targets[@]}" | grep "^$only:")")
each=$(( seconds / ${#targets[@]} > 0 ? seconds / ${#targets[@]} : 1 ))
for entry in "${targets[@]}"; do
  run "${entry%%:*}" "${entry#*:}" "$each"
done
