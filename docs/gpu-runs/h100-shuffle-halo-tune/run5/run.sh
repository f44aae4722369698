#!/bin/bash
cd "$(dirname "$0")"
for round in 1 2; do for b in g0 d2 d3 d4 d6; do for c in "f32 3x3" "f32 5x5" "u8 3x3" "u8 5x5" "u8 rgb 3x3" "f32 3x3 4k" "u8 3x3 odd" "u8 5x5 tiny"; do ODD=1 ./bin/$b "$c" >> $OUT/$b.r1.txt 2>&1; done; done; done
