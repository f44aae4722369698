#!/bin/bash
cd "$(dirname "$0")"
for round in 1 2; do for b in base f0 f6 f7 f67; do ODD=1 ./bin/$b >> $OUT/$b.r$round.txt 2>&1; done; done
{ for pad in 512 1536 4096; do for c in "f32 3x3" "u8 3x3" "f32 9x9"; do echo "PITCH_PAD=$pad"; PITCH_PAD=$pad ./bin/f0 "$c"; done; done
  for s in 8 4 2; do for c in "u8 3x3 odd" "f32 3x3 odd" "u8 rgb 5x5 odd" "f32 sep 15x15 odd"; do echo "STRIP=$s"; ODD=1 STRIP=$s ./bin/f0 "$c"; done; done; } > $OUT/extra.txt 2>&1
