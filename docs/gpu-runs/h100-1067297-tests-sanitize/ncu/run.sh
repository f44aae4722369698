#!/bin/bash
cd "$(dirname "$0")"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for c in "f32 sep 15x15" "u8 5x5" "u8 rgb 5x5" "u8 rgb 15x15" "f32 5x5"; do
  $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SchedulerStats --section InstructionStats --section LaunchStats -k regex:fast_kernel --launch-skip 3 --launch-count 1 ./bin/tune "$c" > "$OUT/ncu-${c// /_}.txt" 2>&1
done
cd $OUT && for f in ncu-*; do echo "== $f"; grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|L1/TEX Hit|Achieved Occupancy|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A" $f; done
