#!/bin/bash
# strip sweep of the edge kernels (border positions found once) at the memory-bound shapes
set -u
D=.devcarry/tune2
mkdir -p $OUT/logs
for c in "u8 3x3:12 16 24 32" "u8 5x5:16 24 32 48 64" "f32 5x5:16 24 32 48 64" "u8 rgb 3x3:8 12 16 24 32" "u8 rgb 5x5:8 12 16 24 32" \
         "u8 5x5 4k:8 10 12 14" "u8 rgb 5x5 4k:12 16 20 24" "f32 5x5 4k:6 8 10 12 16" "u8 rgb 3x3 4k:8 10 12 16" "u8 3x3 8k:8 11 12 16" "u8 5x5 8k:8 10 12 16" "u8 rgb 3x3 2k:4 6 8 12" "f32 5x5 2k:4 6 8 12"; do
  for st in ${c#*:}; do for r in 1 2; do echo "$(ODD=1 STRIP=$st timeout 60 $D/edge "${c%%:*}")"; done; done
done > $OUT/logs/strips-edge.txt 2>&1
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
