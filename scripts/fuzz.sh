#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang and runs them for SECONDS in all (default
# 60), split between them: the filter parsers from tests/fuzz/corpus, the command line from
# tests/fuzz/corpus_cli, the serve protocol's frames from tests/fuzz/corpus_serve. A crash leaves
# crash-* in build/fuzz/findings and fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-60}"

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi
cmake -S tests/fuzz -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$(nproc)"
mkdir -p build/fuzz/findings

# run TARGET SEEDS SECONDS: the working corpus grows in build/; the seeds in the repository stay small.
run() {
  local target=$1 seeds=$2 budget=$3
  mkdir -p "build/fuzz/$seeds"
  cp -n "tests/fuzz/$seeds"/* "build/fuzz/$seeds/" 2>/dev/null || true
  echo "fuzz.sh: $target for $budget s"
  "build/fuzz/$target" -max_total_time="$budget" -max_len=4096 -timeout=10 \
    -artifact_prefix=build/fuzz/findings/ "build/fuzz/$seeds"
}
third=$(( seconds / 3 > 0 ? seconds / 3 : 1 ))
run fuzz_filter_parser corpus "$third"
run fuzz_cli_options corpus_cli "$third"
run fuzz_serve_protocol corpus_serve "$(( seconds - 2 * third > 0 ? seconds - 2 * third : 1 ))"
