#!/bin/bash
# ctest suite and compute-sanitizer on `fast` side by side, from the bundle of the commit.
cd "$(dirname "$0")/.."
B=.devcarry/cuconv-0.1.0-linux-x86_64.tar.xz
mkdir -p $OUT/tests $OUT/sanitize
( OUT=$OUT/tests CUCONV_PACK_OUT=1 bash scripts/gpu-check.sh $B tests > $OUT/tests.txt 2>&1 ) &
( OUT=$OUT/sanitize CUCONV_PACK_OUT=1 CUCONV_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" \
  CUCONV_SANITIZE_VARIANTS="fast" CUCONV_SANITIZE_STRIDE=4 CUCONV_SANITIZE_JOBS=6 CUCONV_SANITIZE_TIMEOUT=400 \
  bash scripts/gpu-check.sh $B sanitize > $OUT/sanitize.txt 2>&1 ) &
wait
cat $OUT/tests.txt; tail -n 12 $OUT/sanitize.txt
