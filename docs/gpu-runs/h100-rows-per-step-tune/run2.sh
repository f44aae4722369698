#!/bin/bash
# old (kernels of 447e1a1) vs new (two-row separable walk + separable strip rule): every case once,
# the separable ones twice more, odd sizes (hashes), and a strip sweep of separable 31x31
cd .devcarry/tune
{ for v in old new; do echo "== $v all"; ./$v; done
  for round in 2 3; do for v in old new; do for c in "f32 sep 15x15" "f32 sep 31x31"; do echo "$v round $round $(./$v "$c" | cut -c18-)"; done; done; done
  for s in 64 128; do for v in old new; do echo "$v STRIP=$s $(STRIP=$s ./$v 'f32 sep 31x31' | cut -c18-)"; done; done
} > $OUT/tune2.txt 2>&1
for v in old new; do echo "== $v ODD"; ODD=1 ./$v; done > $OUT/tune2-odd.txt 2>&1
awk '/== old ODD/{v=1;next} /== new ODD/{v=2;next} /^hash/{ if(v==1) o[++n]=$0; else w[++m]=$0 } END {d=0; for(i=1;i<=n;i++){split(o[i],a," "); split(w[i],b," "); if(a[2]!=b[2]){d++; print "DIFF", substr(o[i],22,20)}} print n, m, "odd cases,", d, "hash differences"}' $OUT/tune2-odd.txt
grep -E "sep|round|STRIP" $OUT/tune2.txt
