#!/bin/bash
cd "$(dirname "$0")"
for round in 1 2; do for b in base e3s e3 e4 e5; do ODD=1 ./bin/$b > $OUT/$b.r$round.txt 2>&1; done; done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for c in "f32 3x3" "u8 3x3" "u8 rgb 3x3"; do
  for b in base e3; do
    $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats -k regex:fast_kernel --launch-skip 3 --launch-count 1 ./bin/$b "$c" > "$OUT/ncu-$b-${c// /_}.txt" 2>&1
  done
done
