#!/bin/bash
# Limiters of the unmet-target shapes at 6c31ff2 (sumr = its kernels/): ncu, one launch each.
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
for c in "u8 3x3" "u8 5x5" "u8 rgb 5x5" "u8 rgb 9x9" "u8 rgb 15x15" "f32 5x5" "f32 15x15"; do
  n=$(echo "$c" | tr ' ' '_')
  timeout 150 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section Occupancy --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section SourceCounters -k regex:fast_kernel --launch-skip 3 --launch-count 1 --export /tmp/$n $D/sumr "$c" > $OUT/logs/ncu-$n.txt 2>&1
  ncu -i /tmp/$n.ncu-rep --page details > $OUT/logs/details-$n.txt 2>&1
  ncu -i /tmp/$n.ncu-rep --page source --csv --print-source sass 2>/dev/null | xz -T4 > $OUT/logs/src-$n.csv.xz
done
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
