#!/bin/bash
# Clamp-free 8-bit rounding for small sums (sumr) and row addresses by offsets advanced a pitch a row (addr) against HEAD (base).
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
for round in 1 2 3; do
  for v in base sumr addr; do
    echo "== $v"; timeout 120 $D/$v
    for c in "u8 5x5 4k" "u8 rgb 5x5 4k" "f32 5x5 4k" "u8 3x3 4k" "f32 3x3 odd" "u8 3x3 odd" "u8 rgb 3x3 4k"; do ODD=1 timeout 30 $D/$v "$c"; done
  done
done > $OUT/logs/sa.txt 2>&1
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
