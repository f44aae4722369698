#!/bin/bash
# usage: run.sh BIN... ; env EXTRA passes
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $OUT/gpu.txt
for round in 1 2; do
for b in "$@"; do
  ODD=1 ./bin/$b > $OUT/$b.r$round.txt 2>&1
done
done
