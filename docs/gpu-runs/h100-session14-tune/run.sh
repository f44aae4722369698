#!/bin/bash
# Session 14: executed SASS per instruction (ncu SourceCounters) of fast at the target shapes,
# and two rows per step of the strip walk for every filter (twoall) against HEAD (base).
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/logs/gpu.txt
for round in 1 2; do
  for v in base twoall; do
    for c in "u8 3x3" "u8 5x5" "f32 3x3" "f32 5x5" "u8 rgb 5x5" "f32 9x9" "u8 rgb 3x3"; do
      echo "== $v round $round"; timeout 30 $D/$v "$c"
    done
  done
done > $OUT/logs/two.txt 2>&1
for v in base twoall; do for c in "u8 5x5 4k" "u8 rgb 5x5 4k" "f32 5x5 4k" "u8 3x3 4k"; do echo "== $v"; ODD=1 timeout 30 $D/$v "$c"; done; done >> $OUT/logs/two.txt 2>&1
echo timing done
for c in "u8 3x3" "u8 5x5" "f32 5x5" "f32 15x15" "u8 rgb 5x5" "u8 rgb 9x9" "f32 3x3"; do
  n=$(echo "$c" | tr ' ' '_')
  timeout 150 ncu --section SourceCounters --section InstructionStats --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats -k regex:fast_kernel --launch-skip 3 --launch-count 1 --export /tmp/$n $D/base "$c" > $OUT/logs/ncu-$n.txt 2>&1
  ncu -i /tmp/$n.ncu-rep --page source --csv --print-source sass > /tmp/src-$n.csv 2>> $OUT/logs/ncu-$n.txt
  ncu -i /tmp/$n.ncu-rep --page details > $OUT/logs/details-$n.txt 2>&1
  xz -T4 -c /tmp/src-$n.csv > $OUT/logs/src-$n.csv.xz
  echo "$c done $(ls -la /tmp/src-$n.csv)"
done
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
