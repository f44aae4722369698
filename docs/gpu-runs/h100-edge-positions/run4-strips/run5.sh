#!/bin/bash
# strips the new rule picks but no sweep timed yet (edge kernels)
set -u
D=.devcarry/tune2
mkdir -p $OUT/logs
for c in "u8 5x5 4k:12 14 16 18 20" "u8 rgb 3x3 4k:16 24 32" "u8 3x3 4k:11 16" "u8 rgb 5x5:32 48 64" "u8 rgb 3x3:16 32 64"; do
  for st in ${c#*:}; do for r in 1 2 3; do echo "$(ODD=1 STRIP=$st timeout 60 $D/edge "${c%%:*}")"; done; done
done > $OUT/logs/strips-edge2.txt 2>&1
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
