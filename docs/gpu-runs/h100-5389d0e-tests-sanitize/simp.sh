#!/bin/bash
# round_pack_u8x4 with clamp_low as an argument (simp, 5389d0e) against 6c31ff2 (sumr): every case, three rounds.
set -u
D=.devcarry/tune3; mkdir -p $OUT/logs
for round in 1 2 3; do for v in sumr simp; do echo "== $v"; timeout 120 $D/$v; done; done > $OUT/logs/simp.txt 2>&1
cd $OUT && tar -cJf logs.tar.xz logs && rm -rf logs
