#!/bin/bash
# fast_tune: HEAD's kernels (old) against index-first border reads + one-wave strips (new), ODD cases, two rounds.
set -u
D=.devcarry/tune
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
for round in 1 2; do
  for b in old new; do ODD=1 timeout 200 $D/$b > $OUT/$b-round$round.txt 2>&1; done
done
for b in old new; do for s in 8 11; do ODD=1 STRIP=$s $D/$b "u8 3x3 4k"; done; done > $OUT/strips.txt 2>&1
ODD=1 timeout 120 ncu --set full -k regex:fast_kernel --launch-skip 3 --launch-count 1 $D/new "u8 3x3 4k" > $OUT/ncu-new-u8-3x3-4k.txt 2>&1
cat $OUT/strips.txt
