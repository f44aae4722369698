#!/bin/bash
# GPU check of one commit: the ctest suite and compute-sanitizer on `fast` side by side, then
# cuconv_fast_tune of the previous kernel tree (bin/base) against this one (bin/new), two rounds.
cd "$(dirname "$0")/.."
B=.devcarry/cuconv-0.1.0-linux-x86_64.tar.xz
mkdir -p $OUT/tests $OUT/sanitize
( OUT=$OUT/tests CUCONV_PACK_OUT=1 bash scripts/gpu-check.sh $B tests > $OUT/tests.txt 2>&1 ) &
( OUT=$OUT/sanitize CUCONV_PACK_OUT=1 CUCONV_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" \
  CUCONV_SANITIZE_VARIANTS="fast" CUCONV_SANITIZE_STRIDE=4 CUCONV_SANITIZE_JOBS=6 CUCONV_SANITIZE_TIMEOUT=420 \
  bash scripts/gpu-check.sh $B sanitize > $OUT/sanitize.txt 2>&1 ) &
wait
mkdir -p /tmp/exp && tar -xJf .devcarry/exp.tar.xz -C /tmp/exp
{ for round in 1 2; do for b in base new; do echo "== round $round $b"; ODD=1 /tmp/exp/exp/bin/$b; done; done; } > $OUT/fast-tune.txt 2>&1
cat $OUT/tests.txt; tail -n 30 $OUT/sanitize.txt
