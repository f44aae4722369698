#!/bin/bash
# ncu on fast's separable 15x15 and f32 5x5 at 16384^2 (the kernels of HEAD: tune/old)
cd .devcarry/tune
for c in "f32 sep 15x15" "f32 5x5"; do
  f="$OUT/ncu-$(echo $c | tr ' ' '_').txt"
  timeout 200 ncu -k regex:fast_kernel --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats \
    --section MemoryWorkloadAnalysis_Tables --section LaunchStats ./old "$c" > "$f" 2>&1
  grep -E "Duration|Throughput|Issued|Eligible|Active Warps|Registers|Stall|No Eligible|Achieved Occ|Theoretical Occ|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Executed Ipc" "$f" | head -40
done
