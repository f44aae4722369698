#!/bin/bash
cd "$(dirname "$0")"
for round in 1 2; do
for c in "u8 3x3 4k" "u8 5x5 4k" "u8 rgb 5x5 4k" "f32 5x5 4k"; do
  for b in base narrow; do
    ./$b "$c"
    for s in 2 4 8 16 32; do STRIP=$s ./$b "$c"; done | sed "s/^/  /"
  done | sed "s/^/$round /"
done
done > $OUT/small.txt 2>&1
for c in "u8 3x3" "u8 5x5"; do for b in base narrow; do echo "$b"; ./$b "$c"; done; done > $OUT/large.txt 2>&1
cat $OUT/small.txt $OUT/large.txt | sed 's/hash \([0-9a-f]\{6\}\)[0-9a-f]*/\1/'
