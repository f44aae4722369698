#!/usr/bin/env bash
# The whole GPU check in one call on a GPU node, from a bundle (scripts/bundle.sh):
#   scripts/gpu-check.sh BUNDLE.tar.xz [tests|sanitize|bench|all]...
# tests:    the full ctest suite from the bundle (CPU + GPU suites);
# sanitize: compute-sanitizer memcheck, racecheck, initcheck and synccheck over the GPU suite
#           (every CUCONV_SANITIZE_STRIDE-th sweep case, default 9) and the CLI for each variant;
# bench:    bin/cuconv_bench (JSON + table).
# Logs go to $OUT (the device tool's folder) or ./gpu-check-out.
set -uo pipefail
tarball="${1:?usage: gpu-check.sh BUNDLE.tar.xz [tests|sanitize|bench|all]...}"
shift
steps=("${@:-all}")
out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
work="$(mktemp -d /tmp/cuconv-gpu-check.XXXXXX)"
tar -xJf "$tarball" -C "$work"
bundle="$(ls -d "$work"/cuconv-*)"
export CUCONV_BIN="$bundle/bin/cuconv" CUCONV_SAMPLES="$bundle/samples"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
wants() { [[ " ${steps[*]} " == *" $1 "* || " ${steps[*]} " == *" all "* ]]; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"

if wants tests; then
  echo "== ctest (bundle)"
  (cd "$bundle" && ./run-tests.sh) 2>&1 | tee "$out/ctest.log" | tail -n 15
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  "$bundle/bin/cuconv_gpu_tests" --duration=true > "$out/gpu-tests-detail.log" 2>&1 || status=1
  tail -n 4 "$out/gpu-tests-detail.log"
fi

if wants sanitize; then
  stride="${CUCONV_SANITIZE_STRIDE:-9}"
  for tool in memcheck racecheck initcheck synccheck; do
    echo "== compute-sanitizer --tool $tool (GPU suite, stride $stride; CLI tests excluded, run below)"
    CUCONV_TEST_STRIDE="$stride" timeout 420 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$bundle/bin/cuconv_gpu_tests" -tce="gpu cli*" > "$out/sanitize-$tool.log" 2>&1
    rc=$?
    echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$tool.log" | tail -n 1)"
    [[ $rc -eq 0 ]] || status=1
    for variant in basic constmem tiled tiled-halo cached; do
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$CUCONV_BIN" "$CUCONV_SAMPLES/coffee.png" \
        "$work/s.png" --filter box:31 --variant "$variant" --border wrap >> "$out/sanitize-$tool-cli.log" 2>&1
      rc=$?
      [[ $rc -eq 0 ]] || { status=1; echo "$tool cli $variant: exit $rc"; }
    done
    echo "$tool cli (5 variants): $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' "$out/sanitize-$tool-cli.log") clean summaries"
  done
fi

if wants bench; then
  echo "== benchmark"
  "$bundle/bin/cuconv_bench" --json "$out/bench.json" 2>&1 | tee "$out/bench.md"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
echo "gpu-check status: $status"
exit "$status"
