#!/bin/bash
# The cuDNN peer alone, against the carried JIT-only pack (scripts/cudnn-peer-pack.sh): the node's
# toolkit has no cuDNN.
cd "$(dirname "$0")/.."
mkdir -p /tmp/cudnn && tar -xJf .devcarry/cudnn-peer.tar.xz -C /tmp/cudnn
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/cudnn-run.txt
nvcc -O2 -std=c++17 -arch=native bench/cudnn_peer.cu -I/tmp/cudnn/include -L/tmp/cudnn/lib -lcudnn -o /tmp/cudnn_peer >> $OUT/cudnn-run.txt 2>&1 || echo "build failed" >> $OUT/cudnn-run.txt
LD_LIBRARY_PATH=/tmp/cudnn/lib:/usr/local/cuda/lib64 timeout 420 /tmp/cudnn_peer --tf32 > $OUT/cudnn.jsonl 2>> $OUT/cudnn-run.txt
echo "exit $?" >> $OUT/cudnn-run.txt
cat $OUT/cudnn-run.txt | tail -20; cut -c1-300 $OUT/cudnn.jsonl
