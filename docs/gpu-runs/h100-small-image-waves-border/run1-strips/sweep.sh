#!/bin/bash
# Strip sweep of fast at the 4096^2 shapes that lose to NPP, and ncu of fast and NPP at 8U 3x3 4096^2.
set -u
mkdir -p /tmp/b && tar -xJf .devcarry/cuconv-0.1.0-linux-x86_64.tar.xz -C /tmp/b
B=$(ls -d /tmp/b/cuconv-*); export LD_LIBRARY_PATH=$B/lib
T=$B/bin/cuconv_fast_tune
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
for round in 1 2; do
for c in "u8 3x3 4k" "u8 5x5 4k" "u8 rgb 5x5 4k" "f32 5x5 4k" "f32 3x3 4k"; do
  for s in rule 4 6 8 10 11 12 13 14 16 20 24; do
    if [ $s = rule ]; then ODD=1 timeout 30 $T "$c"; else ODD=1 STRIP=$s timeout 30 $T "$c"; fi
  done
done
done > $OUT/sweep.txt 2>&1
echo sweep done; grep -c hash $OUT/sweep.txt
nvcc -O2 -std=c++17 -arch=native bench/npp_peer.cu -o /tmp/npp_peer -lnppif -lnppc > $OUT/npp-build.log 2>&1
/tmp/npp_peer --only "8U 1ch" 4096 3 > $OUT/npp-one.txt 2>&1
/tmp/npp_peer --only "8U 1ch" 4096 5 >> $OUT/npp-one.txt 2>&1
cat $OUT/npp-one.txt
for s in 8 16; do
  ODD=1 STRIP=$s timeout 120 ncu --set full -k regex:fast_kernel --launch-skip 3 --launch-count 1 $T "u8 3x3 4k" > $OUT/ncu-fast-u8-3x3-4k-s$s.txt 2>&1
done
timeout 120 ncu --set full --launch-skip 3 --launch-count 2 /tmp/npp_peer --only "8U 1ch" 4096 3 > $OUT/ncu-npp-u8-3x3-4k.txt 2>&1
timeout 120 ncu --set full --launch-skip 3 --launch-count 2 /tmp/npp_peer --only "8U 1ch" 4096 5 > $OUT/ncu-npp-u8-5x5-4k.txt 2>&1
ls -la $OUT
