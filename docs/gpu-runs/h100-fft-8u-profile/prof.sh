#!/bin/bash
# Split of fft's time on an 8-bit RGB image: 8u output (ties summed again) against 32f output (no repair).
mkdir -p /tmp/p && tar -xJf .devcarry/cuconv-0.1.0-linux-x86_64.tar.xz -C /tmp/p; B=$(ls -d /tmp/p/cuconv-*); export LD_LIBRARY_PATH=$B/lib
$B/bin/cuconv_make_corpus --count 1 --out /tmp/img --samples $B/samples --size 8192 --ext .png > $OUT/corpus.txt 2>&1
IMG=$(ls /tmp/img/* | head -1); echo "image: $IMG" | tee $OUT/prof.txt
awk 'BEGIN{srand(7); print "31 31 2000 0"; for(i=0;i<31;i++){l="";for(j=0;j<31;j++) l=l" "(int(rand()*13)-3); print l}}' > /tmp/f31.mat
for d in same 32f; do
  echo "== depth $d --bench 20" >> $OUT/prof.txt
  $B/bin/cuconv "$IMG" /tmp/out-$d.tif --filter /tmp/f31.mat --variant fft --depth $d --bench 20 >> $OUT/prof.txt 2>&1
  echo "== depth $d ncu" >> $OUT/prof.txt
  timeout 200 ncu --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio -k regex:fft_ $B/bin/cuconv "$IMG" /tmp/out2-$d.tif --filter /tmp/f31.mat --variant fft --depth $d >> $OUT/prof.txt 2>&1
done
grep -E "^==|image|ms|fft_|gpu__time|inst_executed" $OUT/prof.txt | head -80
