#!/bin/bash
set -u
D=.devcarry/tune2
mkdir -p $OUT/logs
for r in 1 2 3; do for st in 48 64 96 128 192; do echo "$(STRIP=$st timeout 60 $D/edge "f32 5x5")"; done; done > $OUT/logs/f32-5x5-strips.txt 2>&1
for r in 1 2 3; do for st in 16 20 24; do echo "$(STRIP=$st timeout 60 $D/edge "u8 3x3")"; done; done >> $OUT/logs/f32-5x5-strips.txt 2>&1
tar -czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $OUT/logs
