#!/bin/bash
# GPU check of one commit in one call: benchmark (with the NPP peer), then the ctest suite and
# compute-sanitizer on `fast` side by side, then cuconv_fast_tune of a64d286's kernel tree
# (bin/base) against this one (bin/new), as many rounds as the call's time allows.
cd "$(dirname "$0")/.."
B=.devcarry/cuconv-0.1.0-linux-x86_64.tar.xz
mkdir -p $OUT/bench $OUT/tests $OUT/sanitize /tmp/exp && tar -xJf .devcarry/exp.tar.xz -C /tmp/exp
OUT=$OUT/bench CUCONV_PACK_OUT=1 CUCONV_BENCH_ARGS="--variants fast,auto --no-opencv" CUCONV_SKIP_CUDNN=1 \
  bash scripts/gpu-check.sh $B bench > $OUT/bench.txt 2>&1
( OUT=$OUT/tests CUCONV_PACK_OUT=1 bash scripts/gpu-check.sh $B tests > $OUT/tests.txt 2>&1 ) &
( OUT=$OUT/sanitize CUCONV_PACK_OUT=1 CUCONV_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" \
  CUCONV_SANITIZE_VARIANTS="fast" CUCONV_SANITIZE_STRIDE=4 CUCONV_SANITIZE_JOBS=6 CUCONV_SANITIZE_TIMEOUT=400 \
  bash scripts/gpu-check.sh $B sanitize > $OUT/sanitize.txt 2>&1 ) &
wait
for round in 1 2; do for b in base new; do
  (( SECONDS < 520 )) || break 2
  echo "== round $round $b"; ODD=1 timeout $((575 - SECONDS)) /tmp/exp/exp/bin/$b
done; done > $OUT/fast-tune.txt 2>&1
cat $OUT/tests.txt; tail -n 12 $OUT/sanitize.txt; tail -n 4 $OUT/bench.txt; echo "seconds: $SECONDS"
