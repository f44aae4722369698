#!/bin/bash
cd "$(dirname "$0")"
ODD=1 ./bin/base > $OUT/base.r1.txt 2>&1
for round in 1 2; do for b in f0 f7 f8 f78; do ODD=1 ./bin/$b >> $OUT/$b.r1.txt 2>&1; done; done
{ for s in 32 16 8 4 2; do for c in "u8 3x3 4k" "u8 rgb 3x3 2k" "f32 5x5 2k" "f32 3x3 4k" "f32 sep 15x15 2k" "f32 9x9 2k" "f32 15x15 4k"; do echo -n "STRIP=$s "; ODD=1 STRIP=$s ./bin/f0 "$c"; done; done; } > $OUT/extra.txt 2>&1
