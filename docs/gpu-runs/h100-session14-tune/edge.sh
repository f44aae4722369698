#!/bin/bash
# Edge words loaded by every lane without a branch (edgeall) against 6c31ff2 (sumr).
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
for round in 1 2 3; do
  for v in sumr edgeall; do
    for c in "f32 3x3" "f32 5x5" "u8 3x3" "u8 5x5" "u8 rgb 3x3"; do echo "== $v"; timeout 30 $D/$v "$c"; done
    for c in "u8 5x5 4k" "f32 5x5 4k" "u8 3x3 4k" "f32 3x3 odd" "u8 3x3 odd" "u8 rgb 3x3 4k" "f32 3x3 4k" "u8 3x3 8k"; do echo "== $v"; ODD=1 timeout 30 $D/$v "$c"; done
  done
done > $OUT/logs/edge.txt 2>&1
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
