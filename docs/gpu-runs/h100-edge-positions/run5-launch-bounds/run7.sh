#!/bin/bash
# edge (08f80c3 kernels) against lbA / lbB: launch bounds asking more blocks an SM for the
# one-channel 3x3 / 5x5 kernels (f32 10 / 12, 8U 3x3 7 / 8, 8U 5x5 8 / 9)
set -u
D=.devcarry/tune2
mkdir -p $OUT/logs
for r in 1 2 3; do for b in edge lbA lbB; do for c in "f32 3x3" "f32 5x5" "u8 3x3" "u8 5x5" "f32 5x5 4k" "u8 5x5 4k" "u8 3x3 4k"; do
  echo "$b r$r $(ODD=1 timeout 60 $D/$b "$c")"; done; done; done > $OUT/logs/lb.txt 2>&1
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
