#!/bin/bash
cd "$(dirname "$0")"
for c in "f32 15x15 4k" "u8 rgb 15x15 4k" "f32 sep 15x15 2k" "f32 9x9 2k" "f32 sep 15x15" "f32 sep 31x31" "f32 9x9" "u8 3x3 4k" "f32 3x3 4k"; do
  for s in 128 64 32 16 8 4; do echo -n "STRIP=$s "; ODD=1 STRIP=$s ./bin/tune "$c"; done
  echo -n "rule      "; ODD=1 ./bin/tune "$c"
done > $OUT/strip-sweep.txt 2>&1
cut -c1-10,33-70,128-160 $OUT/strip-sweep.txt
