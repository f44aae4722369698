#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole GPU check in one call on a GPU node, from a bundle (scripts/bundle.sh):
#   scripts/gpu-check.sh BUNDLE.tar.xz|BUNDLE_DIR [tests|sanitize|bench|all|npp|batch|jpeg|served|profile]...
# tests:    the full ctest suite from the bundle (CPU + GPU suites);
# sanitize: compute-sanitizer memcheck, racecheck, initcheck and synccheck over the GPU suite
#           (every CUCONV_SANITIZE_STRIDE-th sweep case, default 4; initcheck, which is about 10x
#           slower per launch, every CUCONV_SANITIZE_STRIDE_INITCHECK-th, default 16) and the CLI,
#           one process per tool and variant (CUCONV_SANITIZE_JOBS side by side, default 8);
# bench:    bin/cuconv_bench (JSON + CSV + table) and the NPP and cuDNN peers (bench/npp_peer.cu,
#           bench/cudnn_peer.cu, built here; cuDNN from the toolkit or CUCONV_CUDNN_PACK);
# npp:      the NPP peer alone;
# batch:    scripts/batch-bench.sh on CUCONV_BATCH_N images (default 200), and on hosts with
#           2+ GPUs a kernel-heavy batch on one GPU and on all;
# jpeg:     the GPU JPEG codec (docs/gpu-jpeg.md): its GPU tests under compute-sanitizer memcheck,
#           scripts/jpeg-bench.sh on CUCONV_BATCH_N JPEGs, and one 24-megapixel JPEG through
#           `--codec gpu` and `--codec opencv` (3 runs each);
# served:   the warm server: compute-sanitizer memcheck of `cuconv-engine serve` started in another
#           folder while clients run single images, standard input and output, a --codec gpu JPEG
#           and a batch (relative paths); bench/serve_bench.py (single calls and `xargs -P16`, 5
#           rounds) and bench/serve_soak.py (16 clients for CUCONV_SOAK_SECONDS, default 120);
# profile:  ncu on three `fast` kernels;
# python:   the Python package (CUCONV_PYTHON_SITE: a folder holding the `cuconv` package built for
#           the node's Python, e.g. build/ci/python packed with the module for Python 3.12):
#           cuconv_bench's float32 8192^2 and 16384^2 presets and bench/python_bench.py --match-bench
#           on them in the same run, --quick (CUCONV_PYTHON_FULL=1: every shape, --reps 250),
#           bench/python_call_parts.py, then pytest alone (it reads the device's free memory)
#           (batch, jpeg, served, profile and python are not part of "all";
#           "all" runs the NPP peer as part of bench).
# Logs go to $OUT (the device tool's folder) or ./gpu-check-out; CUCONV_PACK_OUT=1 packs them into
# one gpu-check-out.tar.gz (the device tool returns at most 8 files).
set -uo pipefail
tarball="${1:?usage: gpu-check.sh BUNDLE.tar.xz [tests|sanitize|bench|all|npp|batch|jpeg|served|profile]...}"
shift
steps=("${@:-all}")
out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
# A folder is a bundle unpacked already (bundle.sh --split's two parts, unpacked in two calls).
work="$(mktemp -d /tmp/cuconv-gpu-check.XXXXXX)"  # scratch, and the bundle when unpacked here
if [[ -d "$tarball" ]]; then
  bundle="$(cd "$tarball" && pwd)"
else
  tar -xJf "$tarball" -C "$work"
  bundle="$(ls -d "$work"/cuconv-*)"
fi
export CUCONV_BIN="$bundle/bin/cuconv" CUCONV_SAMPLES="$bundle/samples"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
wants() { [[ " ${steps[*]} " == *" $1 "* || " ${steps[*]} " == *" all "* ]]; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"

if wants tests; then
  echo "== ctest (bundle)"
  # -V keeps each suite's own output (doctest's counts and failures) in the log: one run only.
  (cd "$bundle" && ./run-tests.sh -V) > "$out/ctest.log" 2>&1 || status=1
  # ctest -V prefixes each suite's lines with its test number ("2: [doctest] ...").
  grep -E '^([0-9]+: )?\[doctest\] (test cases|assertions)|tests passed|Passed|Failed|Skipped' "$out/ctest.log"
fi

if wants sanitize; then
  # One process per (tool, variant), CUCONV_SANITIZE_JOBS at a time: each covers the GPU suite for
  # its variant alone (CUCONV_TEST_VARIANTS; every stride-th sweep case) and the CLI with that
  # variant; one more per tool covers the batch suite. The CLI and fault suites spawn processes
  # of their own, so direct CLI runs of each variant replace them.
  stride="${CUCONV_SANITIZE_STRIDE:-4}"
  cases="${CUCONV_SANITIZE_CASES:-*}"            # doctest -tc filter: rerun some suites only
  tools="${CUCONV_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}"
  # Every GPU variant, as the help page's "Variants (--variant):" table lists them.
  gpu_variants="$("$CUCONV_BIN" --help | awk '/^Variants \(--variant\):/ { on = 1; next }
                                               on && !/^ / { exit } on && /^  [a-z]/ { print $1 }' |
                   grep -vxE 'auto|opencv' | tr '\n' ' ')"
  [[ -n "${gpu_variants// /}" ]] || { echo "gpu-check: no GPU variants in $CUCONV_BIN --help" >&2; exit 1; }
  sanitize_variants="${CUCONV_SANITIZE_VARIANTS:-$gpu_variants}"
  sanitize_jobs="${CUCONV_SANITIZE_JOBS:-8}"
  sanitize_timeout="${CUCONV_SANITIZE_TIMEOUT:-540}"
  # The batch suite filters whole image sets with `auto` (fast): slow under racecheck and
  # initcheck, whose findings would be fast's, covered per variant already.
  batch_tools=" ${CUCONV_SANITIZE_BATCH_TOOLS:-memcheck synccheck} "
  sanitize_one() {  # tool, variant ("batch": the batch suite)
    local tool="$1" variant="$2" log="$out/sanitize-$1-$2.log" rc=0 tool_stride="$stride"
    [[ "$tool" == initcheck ]] && tool_stride="${CUCONV_SANITIZE_STRIDE_INITCHECK:-16}"
    if [[ "$variant" == batch ]]; then
      timeout "$sanitize_timeout" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$bundle/bin/cuconv_gpu_tests" -tc="gpu batch*" --duration=true > "$log" 2>&1 || rc=$?
      echo "$rc" > "$out/sanitize-$tool-$variant.rc"
      return
    fi
    CUCONV_TEST_VARIANTS="$variant" CUCONV_TEST_STRIDE="$tool_stride" timeout "$sanitize_timeout" \
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$bundle/bin/cuconv_gpu_tests" \
      -tce="gpu cli*,gpu faults*,gpu batch*" -tc="$cases" --duration=true > "$log" 2>&1 || rc=$?
    compute-sanitizer --tool "$tool" --error-exitcode 99 "$CUCONV_BIN" "$CUCONV_SAMPLES/coffee.png" \
      "$work/$tool-$variant.png" --filter box:31 --variant "$variant" --border wrap >> "$log" 2>&1 || rc=$?
    compute-sanitizer --tool "$tool" --error-exitcode 99 "$CUCONV_BIN" "$CUCONV_SAMPLES/logo.png" \
      "$work/$tool-$variant-2.png" --filter 4x3+0+2:1,2,3,4,5,6,7,8,9,10,11,12 --variant "$variant" \
      --border constant --border-value 7 --alpha keep >> "$log" 2>&1 || rc=$?
    for big in box:61 gaussian:63,20; do  # tiled's 4x coarsened tile; the largest filter
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$CUCONV_BIN" "$CUCONV_SAMPLES/camera_crop_40x48.png" \
        "$work/$tool-$variant-3.png" --filter "$big" --variant "$variant" --border reflect --overwrite >> "$log" 2>&1 || rc=$?
    done
    echo "$rc" > "$out/sanitize-$tool-$variant.rc"
  }
  parts() { echo "$sanitize_variants"; [[ "$batch_tools" == *" $1 "* ]] && echo batch; }
  for tool in $tools; do
    for variant in $(parts "$tool"); do
      while (( $(jobs -rp | wc -l) >= sanitize_jobs )); do wait -n; done
      sanitize_one "$tool" "$variant" &
    done
  done
  wait
  for tool in $tools; do
    rc=0 summaries=0 dirty=""
    expected_summaries=$((4 * $(wc -w <<< "$sanitize_variants") + $(parts "$tool" | wc -w)))
    for variant in $(parts "$tool"); do
      part_rc="$(cat "$out/sanitize-$tool-$variant.rc")"
      [[ "$part_rc" == 0 ]] || { rc="$part_rc"; echo "  $tool $variant: exit $part_rc"; }
      summaries=$((summaries + $(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards' "$out/sanitize-$tool-$variant.log")))
      dirty+="$(grep -E 'ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]' "$out/sanitize-$tool-$variant.log" | head -n 3)"
      echo "  $tool $variant: $(grep -E '^\[doctest\] (test cases|assertions)' "$out/sanitize-$tool-$variant.log" | tr -s ' ' | tr '\n' ' ')"
    done
    echo "$tool: exit $rc, $summaries clean summaries ($expected_summaries expected: per variant 1 suite + 4 CLI runs, and the batch suite under $batch_tools)${dirty:+; DIRTY: $dirty}"
    [[ "$rc" == 0 ]] || status=1
  done
fi

if wants bench; then
  echo "== benchmark"
  # CUCONV_BENCH_ARGS: extra options, e.g. "--quick --variants fast,auto" for a first look
  # shellcheck disable=SC2086
  "$bundle/bin/cuconv_bench" --json "$out/bench.json" --csv "$out/bench.csv" ${CUCONV_BENCH_ARGS:-} > "$out/bench.md" 2>&1 || status=1
  tail -n 5 "$out/bench.md"
fi

if wants bench || wants npp; then
  # The NPP peer builds here, against the node's CUDA toolkit (NPP is not in Debian's packages).
  if [[ -z "${CUCONV_SKIP_NPP:-}" ]] && command -v nvcc > /dev/null && [[ -f bench/npp_peer.cu ]]; then
    if nvcc -O2 -std=c++17 -arch=native bench/npp_peer.cu -o "$work/npp_peer" -lnppif -lnppc > "$out/npp-build.log" 2>&1; then
      "$work/npp_peer" > "$out/npp.jsonl" 2>> "$out/npp-build.log" || status=1
      echo "npp_peer: $(wc -l < "$out/npp.jsonl") results"
    else
      echo "npp_peer did not build (see npp-build.log)"; tail -n 5 "$out/npp-build.log"
    fi
  fi
  # The cuDNN peer (bench/cudnn_peer.cu, f32 only): against the cuDNN of the node's toolkit where it
  # has one, else against CUCONV_CUDNN_PACK (scripts/cudnn-peer-pack.sh's tarball), else skipped.
  # A peer that fails is reported, not counted as a failed check.
  if [[ -z "${CUCONV_SKIP_CUDNN:-}" ]] && command -v nvcc > /dev/null && [[ -f bench/cudnn_peer.cu ]]; then
    cuda_root="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
    cudnn_flags=() cudnn_lib=""
    if [[ -f "$cuda_root/include/cudnn.h" ]]; then
      cudnn_flags=(-lcudnn)
    elif [[ -n "${CUCONV_CUDNN_PACK:-}" && -f "$CUCONV_CUDNN_PACK" ]]; then
      mkdir -p "$work/cudnn" && tar -xJf "$CUCONV_CUDNN_PACK" -C "$work/cudnn"
      cudnn_flags=(-I"$work/cudnn/include" -L"$work/cudnn/lib" -lcudnn)
      cudnn_lib="$work/cudnn/lib:"
    fi
    if (( ${#cudnn_flags[@]} == 0 )); then
      echo "cudnn_peer skipped: no cuDNN in $cuda_root and no CUCONV_CUDNN_PACK"
    elif nvcc -O2 -std=c++17 -arch=native bench/cudnn_peer.cu "${cudnn_flags[@]}" -o "$work/cudnn_peer" > "$out/cudnn-build.log" 2>&1; then
      # One process per case: a fault inside cuDNN (8192^2 31x31 with cuDNN 9.12's JIT engines)
      # ends its process. CUCONV_CUDNN_ARGS: e.g. --tf32 with the JIT-only pack, whose engines
      # are all TF32 ones.
      : > "$out/cudnn.jsonl"
      for size in 4096 8192 16384; do
        for k in 3 5 9 15 31; do
          # shellcheck disable=SC2086
          LD_LIBRARY_PATH="$cudnn_lib$cuda_root/lib64:$LD_LIBRARY_PATH" timeout "${CUCONV_CUDNN_TIMEOUT:-120}" \
            "$work/cudnn_peer" --size "$size" --filter "$k" ${CUCONV_CUDNN_ARGS:-} >> "$out/cudnn.jsonl" \
            2>> "$out/cudnn-build.log" || echo "cudnn_peer --size $size --filter $k exited with $?"
        done
      done
      echo "cudnn_peer: $(grep '"variant":"cudnn"' "$out/cudnn.jsonl" | grep -vc '"error"') results, $(grep -c '"error"' "$out/cudnn.jsonl") errors"
    else
      echo "cudnn_peer did not build (see cudnn-build.log)"; tail -n 5 "$out/cudnn-build.log"
    fi
  fi
fi

if [[ " ${steps[*]} " == *" batch "* ]]; then  # not part of "all": minutes of image coding
  echo "== batch mode: ${CUCONV_BATCH_N:-200} images of about 2000x2000 RGB"
  OUT="$out" bash "$bundle/scripts/batch-bench.sh" "$bundle/bin" "${CUCONV_BATCH_N:-200}" "$work/corpus" \
    > "$out/batch-bench.log" 2>&1 || status=1
  grep "batch-bench:" "$out/batch-bench.log"
  gpus="$(nvidia-smi -L | wc -l)"
  if (( gpus >= 2 )); then
    # A kernel-heavy batch (63x63 dense filter: the GPU, not image coding, sets the pace) on one
    # GPU and on all of them.
    : > "$out/scaling.txt"
    for devices in 0 all; do  # not piped: a failed run must reach $status in this shell
      scratch="$(mktemp -d)"
      start="$(date +%s%N)"
      rc=0
      "$bundle/bin/cuconv" --out-dir "$scratch" --filter "${CUCONV_HEAVY_FILTER:-gaussian:31,10}" \
        --devices "$devices" --json "$out/scaling-$devices.json" "$work/corpus" > /dev/null 2>&1 || rc=$?
      (( rc == 0 )) || status=1
      end="$(date +%s%N)"
      echo "scaling: --devices $devices: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s (exit $rc)" \
        | tee -a "$out/scaling.txt"
      rm -rf "$scratch"
    done
  fi
fi

if [[ " ${steps[*]} " == *" jpeg "* ]]; then  # not part of "all": minutes of image coding
  echo "== GPU JPEG codec"
  rc=0
  compute-sanitizer --tool memcheck --error-exitcode 99 "$bundle/bin/cuconv_gpu_tests" -tc="gpu jpeg*" \
    > "$out/sanitize-memcheck-jpeg.log" 2>&1 || rc=$?
  (( rc == 0 )) || status=1
  echo "memcheck of the GPU JPEG tests: exit $rc"; grep -E "ERROR SUMMARY|\[doctest\] (test cases|assertions)" "$out/sanitize-memcheck-jpeg.log"
  OUT="$out" bash "$bundle/scripts/jpeg-bench.sh" "$bundle/bin" "${CUCONV_BATCH_N:-200}" "$work/jpeg-corpus" \
    > "$out/jpeg-bench.log" 2>&1 || status=1
  grep "jpeg-bench:" "$out/jpeg-bench.log"
  # One 24-megapixel photo (about 4900 x 4900), single-image mode, each codec three times.
  "$bundle/bin/cuconv_make_corpus" --count 1 --out "$work/jpeg-24mp" --samples "$bundle/samples" --size 4900 \
    --ext .jpg --quality 90 > /dev/null
  big="$(ls "$work"/jpeg-24mp/corpus_*.jpg)"
  : > "$out/jpeg-24mp.txt"
  for run in 1 2 3; do
    for codec in gpu opencv; do
      start="$(date +%s%N)"
      rc=0
      "$bundle/bin/cuconv" "$big" "$work/jpeg-24mp/out-$codec.jpg" -f gauss5 --codec "$codec" --overwrite || rc=$?
      (( rc == 0 )) || status=1
      end="$(date +%s%N)"
      echo "24 MP single image: --codec $codec run $run: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') s (exit $rc)" \
        | tee -a "$out/jpeg-24mp.txt"
    done
  done
fi

if [[ " ${steps[*]} " == *" served "* ]]; then  # not part of "all": minutes of whole processes
  echo "== served: memcheck of a server, serve_bench, soak"
  served="$work/served"
  mkdir -p "$served/work/sub" "$served/srv" "$served/batch"
  mkdir -m 700 "$served/s"
  "$bundle/bin/cuconv_make_corpus" --count 3 --out "$served/batch" --samples "$bundle/samples" --size 2000 \
    --ext .jpg --quality 90 > /dev/null
  cp "$bundle/samples/coffee.png" "$served/work/in.png"
  cp "$(ls "$served"/batch/*.jpg | head -n 1)" "$served/work/photo.jpg"
  (cd "$served/srv" && exec compute-sanitizer --tool memcheck --error-exitcode 99 "$bundle/bin/cuconv-engine" serve \
     --socket "$served/s/socket" --idle-exit 0) > "$out/served-memcheck.log" 2>&1 &
  sanitized=$!
  for _ in $(seq 600); do CUCONV_SOCKET="$served/s/socket" "$bundle/bin/cuconv" --server always --version > /dev/null 2>&1 && break; sleep 0.1; done
  rc=0
  (cd "$served/work" && export CUCONV_SOCKET="$served/s/socket" CUCONV_SERVER=always &&
     "$bundle/bin/cuconv" in.png sub/a.png -f gauss5 && "$bundle/bin/cuconv" in.png sub/b.jpg -f box:7 -v &&
     "$bundle/bin/cuconv" photo.jpg sub/c.jpg -f gauss5 --codec gpu && "$bundle/bin/cuconv" - png:- -f sharpen < in.png > sub/d.png &&
     "$bundle/bin/cuconv" --out-dir out --codec gpu -f gauss5 ../batch/ && "$bundle/bin/cuconv" --out-dir out2 -f gauss5 in.png) \
     >> "$out/served-clients.log" 2>&1 || rc=$?
  CUCONV_SOCKET="$served/s/socket" "$bundle/bin/cuconv" serve --stop >> "$out/served-clients.log" 2>&1 || kill "$sanitized"
  wait "$sanitized"; server_rc=$?
  echo "served memcheck: clients exit $rc, server exit $server_rc; $(grep -E 'ERROR SUMMARY' "$out/served-memcheck.log")"
  (( rc == 0 && server_rc == 0 )) || status=1
  python3 bench/serve_bench.py --cuconv "$bundle/bin/cuconv" --engine "$bundle/bin/cuconv-engine" --rounds 5 \
    --parts single,xargs --out "$out/serve-bench.json" > "$out/serve-bench.log" 2>&1 || status=1
  tail -n 25 "$out/serve-bench.log"
  python3 bench/serve_soak.py --cuconv "$bundle/bin/cuconv" --seconds "${CUCONV_SOAK_SECONDS:-120}" \
    --out "$out/serve-soak.json" > "$out/serve-soak.log" 2>&1 || status=1
  tail -n 3 "$out/serve-soak.log"
fi

if [[ " ${steps[*]} " == *" profile "* ]]; then  # not part of "all": ncu replays kernels
  echo "== ncu profile of fast (8192^2: f32 3x3, f32 15x15, 8U RGB 3x3)"
  profile() {  # name, kernel regex, bench options
    ncu --kernel-name-base demangled -k "regex:$2" --launch-skip 6 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis "$bundle/bin/cuconv_bench" --quick --no-opencv --variants fast \
      --reps 3 > "$out/ncu-$1.txt" 2>&1 || status=1
    grep -q "No kernels were profiled" "$out/ncu-$1.txt" && { echo "ncu: $1 matched no kernel"; status=1; }
    grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Stall" \
      "$out/ncu-$1.txt" | head -n 12
  }
  # ncu's demangled names spell template arguments as (int)1 and (bool)0
  profile f32-3x3 'fast_kernel<float, float, \(int\)1, \(int\)1, \(bool\)0>'
  profile f32-15x15 'fast_kernel<float, float, \(int\)1, \(int\)7, \(bool\)0>'
  profile u8rgb-3x3 'fast_kernel<unsigned char, unsigned char, \(int\)3, \(int\)1, \(bool\)0>'
fi
if [[ " ${steps[*]} " == *" python "* ]]; then  # not part of "all": needs the package for this Python
  echo "== Python package"
  site="${CUCONV_PYTHON_SITE:?gpu-check: the python step needs CUCONV_PYTHON_SITE (a folder with the cuconv package)}"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  "$bundle/bin/cuconv_bench" --no-opencv --reps 30 --variants auto \
    --filters "sobel-x 3x3,gauss5 5x5,gaussian 7x7,gaussian 9x9,gaussian 15x15,box 15x15" \
    --shapes "f32 1ch 8192,f32 1ch 16384" --json "$out/python-kernels.json" > "$out/python-kernels.log" 2>&1 || status=1
  python3 bench/python_bench.py --match-bench "$out/python-kernels.json" --reps 100 \
    --out "$out/python-match.json" 2>&1 | tee "$out/python-match.log" | tail -n 13
  [[ -s "$out/python-match.json" ]] && python3 -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["results"])' \
    "$out/python-match.json" || { echo "gpu-check: --match-bench timed no row"; status=1; }
  if [[ -n "${CUCONV_PYTHON_FULL:-}" ]]; then
    python3 bench/python_bench.py --reps 250 --out "$out/python-full.json" > "$out/python-bench.log" 2>&1 || status=1
  else
    python3 bench/python_bench.py --quick --reps 500 --out "$out/python-quick.json" > "$out/python-bench.log" 2>&1 || status=1
  fi
  grep -E " cuconv " "$out/python-bench.log" | head -n 40
  python3 bench/python_call_parts.py --reps 1000 > "$out/python-call-parts.log" 2>&1 || status=1
  head -n 30 "$out/python-call-parts.log"
  (cd python/tests && CUCONV_TEST_CLI="$CUCONV_BIN" python3 -m pytest -q -rs -p no:cacheprovider . ) \
    > "$out/pytest.log" 2>&1 || status=1
  tail -n 4 "$out/pytest.log"
fi
if [[ -n "${CUCONV_PACK_OUT:-}" ]]; then
  (cd "$out" && tar -czf "$work/gpu-check-out.tar.gz" . && find . -mindepth 1 -delete && mv "$work/gpu-check-out.tar.gz" .)
fi
echo "gpu-check status: $status"
exit "$status"
