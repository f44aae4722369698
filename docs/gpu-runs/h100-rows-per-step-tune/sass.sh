#!/bin/bash
# SASS of fast_kernel<float, float, 1, 7, true> (separable 15x15) in the old and new tune builds
cd .devcarry/tune
for v in old new; do
  cuobjdump -sass $v > /tmp/$v.sass 2>&1
  awk -v v=$v '/Function : /{f = ($0 ~ /fast_kernelIffLi1ELi7ELb1E/)} f && /\/\*[0-9a-f]{4}\*\// {n++; if ($0 ~ / MOV /) m++; if ($0 ~ /FFMA/) a++; if ($0 ~ /BRA/) b++} END {print v": "n" instructions, "m" MOV, "a" FFMA, "b" BRA"}' /tmp/$v.sass
done | tee $OUT/sass-counts.txt
for v in old new; do
  timeout 120 ncu -k regex:fast_kernel --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section Occupancy ./$v "f32 sep 15x15" > "$OUT/ncu-sep15-$v.txt" 2>&1
  echo "$v: $(grep -E 'Duration|Issued Instructions  |Issued Warp Per|Registers Per|Achieved Active' "$OUT/ncu-sep15-$v.txt" | tr -s ' ' | tr '\n' ';')"
done | tee -a $OUT/sass-counts.txt
