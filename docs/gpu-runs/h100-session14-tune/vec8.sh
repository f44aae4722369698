#!/bin/bash
# 8 elements a thread (32-byte f32 chunks) from 11x11 to 15x15 (vec8f) against HEAD (base).
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
for round in 1 2; do
  for v in base vec8f; do
    for c in "f32 15x15" "f32 sep 15x15" "u8 15x15" "u8 rgb 15x15"; do echo "== $v"; timeout 30 $D/$v "$c"; done
    for c in "f32 15x15 4k" "u8 rgb 15x15 4k" "f32 15x15 8k" "u8 15x15 4k" "f32 sep 15x15 4k" "u8 rgb 15x15 odd" "f32 15x15 tiny"; do echo "== $v"; ODD=1 timeout 30 $D/$v "$c"; done
  done
done > $OUT/logs/vec8.txt 2>&1
for s in 128 160 200 256; do for v in base vec8f; do echo "== $v"; STRIP=$s timeout 30 $D/$v "f32 15x15"; STRIP=$s timeout 30 $D/$v "u8 rgb 15x15"; done; done >> $OUT/logs/vec8.txt 2>&1
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
