#!/bin/bash
# old against noedge (edge words / edge chunks of inside rows not read through the border rule:
# wrong values, timing only), 4096^2 shapes; then ncu of both at u8 5x5 4k and rgb 5x5 4k.
set -u
D=.devcarry/tune2
mkdir -p $OUT/logs
for round in 1 2 3; do
  for b in old noedge; do
    for c in "u8 5x5 4k" "u8 rgb 5x5 4k" "u8 3x3 4k" "f32 5x5 4k" "u8 rgb 3x3 4k" "u8 rgb 9x9 4k" "f32 15x15 4k" "u8 5x5" "u8 rgb 5x5"; do
      echo "$b r$round $(ODD=1 timeout 60 $D/$b "$c")"
    done
  done
done > $OUT/logs/noedge.txt 2>&1
for b in old noedge; do for c in "u8 5x5 4k" "u8 rgb 5x5 4k"; do
  ODD=1 timeout 100 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats -k regex:fast_kernel --launch-skip 3 --launch-count 1 $D/$b "$c" > "$OUT/logs/ncu-$b-${c// /_}.txt" 2>&1
done; done
for b in old g3; do
  for c in "u8 5x5 4k:4 6 8 10 12 16" "u8 rgb 5x5 4k:6 8 10 13 16"; do
    for st in ${c#*:}; do echo "$b $(ODD=1 STRIP=$st timeout 60 $D/$b "${c%%:*}")"; done
  done
done > $OUT/logs/strips.txt 2>&1
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
grep -h "kernel" /dev/null
