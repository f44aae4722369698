#!/bin/bash
# Benchmark of one commit (cuconv_bench, NPP and cuDNN peers) and ncu's DRAM bytes of f32 3x3 for
# the previous kernel tree (bin/base) and this one (bin/new).
cd "$(dirname "$0")/.."
B=.devcarry/cuconv-0.1.0-linux-x86_64.tar.xz
ls /usr/local/cuda/lib64/ | grep -i cudnn > $OUT/cudnn-libs.txt 2>&1; ls /usr/local/cuda/include | grep -i cudnn >> $OUT/cudnn-libs.txt 2>&1
mkdir -p /tmp/exp && tar -xJf .devcarry/exp.tar.xz -C /tmp/exp
for b in base new; do
  timeout 150 ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -k regex:fast_kernel --launch-skip 3 --launch-count 1 /tmp/exp/exp/bin/$b "f32 3x3" > $OUT/ncu-f32-3x3-$b.txt 2>&1
done
mkdir -p $OUT/bench
OUT=$OUT/bench CUCONV_PACK_OUT=1 CUCONV_BENCH_ARGS="--variants fast,auto --no-opencv" CUCONV_CUDNN_TIMEOUT=240 \
  bash scripts/gpu-check.sh $B bench > $OUT/bench.txt 2>&1
cat $OUT/bench.txt; cat $OUT/cudnn-libs.txt | head; grep -E "dram__bytes|gpu__time|lts__t_sectors|dram__through" $OUT/ncu-*.txt
