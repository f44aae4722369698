#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang and runs each for SECONDS (default 60),
# starting from tests/fuzz/corpus. A crash leaves crash-* in build/fuzz/findings and fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-60}"

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi
cmake -S tests/fuzz -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$(nproc)"
mkdir -p build/fuzz/findings build/fuzz/corpus
cp -n tests/fuzz/corpus/* build/fuzz/corpus/ 2>/dev/null || true
# The working corpus grows in build/; the seeds in the repository stay small.
build/fuzz/fuzz_filter_parser -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -artifact_prefix=build/fuzz/findings/ build/fuzz/corpus
