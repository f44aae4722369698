#!/bin/bash
# fast_tune: HEAD (old) against strip-edge FMA skipping: g1 one guarded loop, g3 three loops,
# g3lb three loops at HEAD's blocks an SM (launch bounds). ODD cases, two rounds; then strips.
set -u
D=.devcarry/tune2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
for round in 1 2; do
  for b in old g1 g3 g3lb; do
    s=$SECONDS; ODD=1 timeout 150 $D/$b > $OUT/$b-round$round.txt 2>&1; echo "$b round $round: $((SECONDS-s)) s"
  done
done
for b in old g3 g3lb; do
  for c in "u8 5x5 4k:4 6 8 10 12 16" "u8 rgb 5x5 4k:6 8 10 13 16" "u8 3x3:8 12 16 24" "f32 9x9:16 32 64" "f32 15x15:32 64 128" "u8 rgb 9x9:16 32 64" "u8 rgb 15x15:32 64 128"; do
    for st in ${c#*:}; do echo "$b $(ODD=1 STRIP=$st timeout 60 $D/$b "${c%%:*}")"; done
  done
done > $OUT/strips.txt 2>&1
echo done
