#!/bin/bash
# One gpu-check step with a hard time limit; logs packed into $OUT whatever happens.
# usage: step.sh SECONDS STEP...   (env as for scripts/gpu-check.sh)
limit="$1"; shift
mkdir -p /tmp/o
OUT=/tmp/o CUCONV_SKIP_CUDNN=1 timeout "$limit" bash scripts/gpu-check.sh .devcarry/cuconv-0.1.0-linux-x86_64.tar.xz "$@" > /tmp/o/step.log 2>&1
echo "step exit $?" >> /tmp/o/step.log
tar -czf "$OUT/logs.tar.gz" -C /tmp/o .
cp /tmp/o/step.log "$OUT/"
cat /tmp/o/step.log | tail -40
