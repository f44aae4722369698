#!/bin/bash
# separable 15x15 (and 31x31) at 16384^2: strip heights, both builds, two rounds
cd .devcarry/tune
for round in 1 2; do
  for s in 32 64 128; do
    for v in old new; do
      echo "$v STRIP=$s $(STRIP=$s ./$v 'f32 sep 15x15' | grep -o 'kernel .*')"
    done
  done
done | tee $OUT/strips.txt
