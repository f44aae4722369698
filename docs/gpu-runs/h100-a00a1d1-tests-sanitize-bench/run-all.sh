#!/bin/bash
# Tests, sanitizers, benchmark (with the NPP peer) from the bundle; logs packed into $OUT.
export CUCONV_PACK_OUT=1 CUCONV_SKIP_CUDNN=1
bash scripts/gpu-check.sh .devcarry/cuconv-0.1.0-linux-x86_64.tar.xz all
