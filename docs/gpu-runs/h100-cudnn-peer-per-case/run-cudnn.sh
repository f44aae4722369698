#!/bin/bash
# The cuDNN peer alone, against the carried JIT-only pack (scripts/cudnn-peer-pack.sh; the node's
# toolkit has no cuDNN), one process per case as scripts/gpu-check.sh runs it, with --tf32 (the
# pack's engines are all TF32 ones).
cd "$(dirname "$0")/.."
mkdir -p /tmp/cudnn && tar -xJf .devcarry/cudnn-peer.tar.xz -C /tmp/cudnn
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/cudnn-run.txt
nvcc -O2 -std=c++17 -arch=native bench/cudnn_peer.cu -I/tmp/cudnn/include -L/tmp/cudnn/lib -lcudnn -o /tmp/cudnn_peer >> $OUT/cudnn-run.txt 2>&1 || echo "build failed" >> $OUT/cudnn-run.txt
: > $OUT/cudnn.jsonl
for size in 4096 8192 16384; do for k in 3 5 9 15 31; do
  LD_LIBRARY_PATH=/tmp/cudnn/lib:/usr/local/cuda/lib64 timeout 120 /tmp/cudnn_peer --size $size --filter $k --tf32 >> $OUT/cudnn.jsonl 2>> $OUT/cudnn-run.txt || echo "size $size filter $k: exit $?" >> $OUT/cudnn-run.txt
done; done
tail -8 $OUT/cudnn-run.txt; grep '"cudnn"' $OUT/cudnn.jsonl | cut -c1-220
