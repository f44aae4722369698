#!/bin/bash
# GPU check of one commit: ctest suite beside compute-sanitizer on `fft` (the kernels changed),
# then the benchmark (fast, auto, fft; NPP peer).
cd "$(dirname "$0")/.."
B=.devcarry/cuconv-0.1.0-linux-x86_64.tar.xz
mkdir -p $OUT/tests $OUT/sanitize $OUT/bench
( OUT=$OUT/tests CUCONV_PACK_OUT=1 bash scripts/gpu-check.sh $B tests > $OUT/tests.txt 2>&1 ) &
( OUT=$OUT/sanitize CUCONV_PACK_OUT=1 CUCONV_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" \
  CUCONV_SANITIZE_VARIANTS="${SAN_VARIANTS:-fft}" CUCONV_SANITIZE_STRIDE=4 CUCONV_SANITIZE_JOBS=8 CUCONV_SANITIZE_TIMEOUT=400 \
  bash scripts/gpu-check.sh $B sanitize > $OUT/sanitize.txt 2>&1 ) &
wait
OUT=$OUT/bench CUCONV_PACK_OUT=1 CUCONV_BENCH_ARGS="--variants fast,auto,fft --no-opencv" CUCONV_SKIP_CUDNN=1 \
  bash scripts/gpu-check.sh $B bench > $OUT/bench.txt 2>&1
cat $OUT/tests.txt; tail -n 14 $OUT/sanitize.txt; tail -n 3 $OUT/bench.txt; echo "seconds: $SECONDS"
