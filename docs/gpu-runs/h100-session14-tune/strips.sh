#!/bin/bash
# Strip sweep of the FMA-bound target shapes around the ceil(waves) x (strip + K - 1) model's minima.
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
for round in 1 2; do
  for s in rule 64 96 128 149 160 176 187 200 224 256 270; do
    for c in "f32 15x15" "u8 rgb 15x15" "u8 rgb 9x9" "f32 9x9"; do
      if [ $s = rule ]; then timeout 30 $D/base "$c"; else STRIP=$s timeout 30 $D/base "$c"; fi
    done
  done
done > $OUT/logs/strips.txt 2>&1
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
