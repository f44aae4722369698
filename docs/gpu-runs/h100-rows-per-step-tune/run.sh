#!/bin/bash
# old vs new fast kernels, two rounds each, then the odd-size cases (hashes)
cd .devcarry/tune
for round in 1 2; do for v in old new; do echo "== $v round $round"; ./$v; done; done > $OUT/tune.txt 2>&1
for v in old new; do echo "== $v ODD"; ODD=1 ./$v; done > $OUT/tune-odd.txt 2>&1
cat $OUT/tune.txt | head -80
