#!/bin/bash
# fast_tune of HEAD's kernels (old) against the few-waves strip refinement at 4 and 8 waves (new4, new8), ODD cases, two rounds;
# strip sweeps of the shapes the refinement moves.
set -u
D=.devcarry/tune
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
for round in 1 2; do
  for b in old new4 new8; do ODD=1 timeout 200 $D/$b > $OUT/$b-round$round.txt 2>&1; done
done
for c in "u8 rgb 3x3 4k" "u8 3x3 8k" "u8 5x5 4k"; do
  for s in 8 9 10 11 12 14 16; do ODD=1 STRIP=$s timeout 30 $D/old "$c"; done
done > $OUT/sweep2.txt 2>&1
tail -3 $OUT/*.txt
