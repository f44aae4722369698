#!/bin/bash
# old against edge (border positions found once per thread: registers on the direct path, shared
# memory on the staged one) and noedge (no edge reads: a timing bound), all cases, two rounds;
# then strips at the two 4096^2 shapes slower than NPP.
set -u
D=.devcarry/tune2
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/logs/gpu.txt
for round in 1 2; do
  for b in old edge noedge; do
    s=$SECONDS; ODD=1 timeout 150 $D/$b > $OUT/logs/$b-round$round.txt 2>&1; echo "$b round $round: $((SECONDS-s)) s"
  done
done
for b in old edge; do
  for c in "u8 5x5 4k:6 8 10 12 16" "u8 rgb 5x5 4k:6 8 10 13 16" "u8 3x3 4k:8 11 16"; do
    for st in ${c#*:}; do echo "$b $(ODD=1 STRIP=$st timeout 60 $D/$b "${c%%:*}")"; done
  done
done > $OUT/logs/strips.txt 2>&1
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
