#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Plants known defects one at a time in the CPU path (src/convolve/cpu_reference.cpp, the `opencv`
# variant, the pass rule, the cost model, the keeper, the served client's file checks) or the GPU
# path (src/gpu/gpu_convolve.cpp, kernels/common.cuh, the codec pipeline's byte bound), rebuilds, runs the
# suite that should catch it, and restores the file. Each defect must make at least one test case
# fail; the table it prints (mutation, caught or MISSED, the failing test cases) goes in
# docs/testing.md. Exit status: 0 when every mutation run was caught.
#   scripts/mutation-check.sh [cpu|gpu|all|ci] [MUTATION...]   (default: cpu, every CPU mutation)
#   BUILD=build/ci (configured with the ci preset); TESTS='-tce=batch signals*' (one doctest option) narrows the run.
#   `ci` (.ci/run's step): the CPU mutations that name the test cases meant to catch them, each run
#   on those cases only (a rebuild of one file and a link each), so the step stays within minutes.
# The GPU mutations need a CUDA device (cuconv_gpu_tests exits 77 without one: "not run").
#
# A GPU node that cannot build cuconv (no OpenCV or libjpeg headers there) runs mutants built
# elsewhere, in two steps:
#   scripts/mutation-check.sh gpu-pack BUNDLE.tar.xz [MUTATION...]   (here: a build machine)
#     builds cuconv_gpu_tests and cuconv once per GPU mutation and once unmutated ("baseline"),
#     and packs them with the bundle's lib/ and samples/ (scripts/bundle.sh of the same tree)
#     into $PACK (default dist/gpu-mutants.tar.xz): the libraries take about 51 MB packed, the
#     first mutant about 7.5 and each more one about 0.4, so a device call that carries at most
#     64 MiB takes the mutants in two packs; PACK_LIB=0 leaves lib/ out (eight mutants and the
#     baseline: 10.9 MB), for a node that has a bundle of the same tree unpacked already (gpu-run
#     then takes LIB_DIR=its lib);
#   scripts/mutation-check.sh gpu-run dist/gpu-mutants.tar.xz [MUTATION...]   (the GPU node)
#     runs each packed mutant's GPU suite (baseline: the unmutated one; name it to run it) and
#     prints the table. ABORT_AFTER=1 stops a suite at its first failed assertion (a mutant is
#     caught sooner); MUTANT_TIMEOUT=S (default 240) ends a suite after S seconds ("timed out",
#     neither caught nor missed); TESTS as above. Logs go to $OUT when set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${BUILD:-build/ci}"
which="${1:-cpu}"
shift || true
tarball=""
if [[ "$which" == gpu-pack || "$which" == gpu-run ]]; then
  tarball="${1:?usage: mutation-check.sh $which TARBALL [MUTATION...]}"
  shift
fi
declare -A only=()
for name in "$@"; do only[$name]=1; done

cpu_file=src/convolve/cpu_reference.cpp
gpu_file=src/gpu/gpu_convolve.cpp
round_file=kernels/common.cuh
# The CPU variant's entry, wrapped so a mutation can change its result (MUTATE is replaced).
entry='cv::Mat convolve_opencv(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method, const cv::Mat& into) {'
wrap() {  # wrap CODE: the entry, with CODE applied to its result r
  printf '%s\n' "cv::Mat convolve_opencv_planted(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method, const cv::Mat& into);" \
    "cv::Mat convolve_opencv(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method, const cv::Mat& into) {" \
    "  cv::Mat r = convolve_opencv_planted(src, job, method, into);" "  $1" "  return r;" "}" \
    "cv::Mat convolve_opencv_planted(const cv::Mat& src, const ConvolveJob& job, OpenCvMethod method, const cv::Mat& into) {"
}

# mutation NAME SUITE FILE TEXT REPLACEMENT: TEXT must occur once in FILE.
names=(); suites=(); files=(); texts=(); replacements=(); cases=()
# An optional sixth field: the test cases (one doctest -tc pattern list) that `ci` runs for it.
mutation() { names+=("$1"); suites+=("$2"); files+=("$3"); texts+=("$4"); replacements+=("$5"); cases+=("${6:-}"); }
mutation cpu-skip-last-row cpu "$cpu_file" "$entry" \
  "$(wrap 'if (r.rows > 1) r.row(r.rows - 1).setTo(cv::Scalar::all(0));')" \
  '--alpha keep passes alpha through*'
mutation cpu-skip-last-column cpu "$cpu_file" "$entry" \
  "$(wrap 'if (r.cols > 1) r.col(r.cols - 1).setTo(cv::Scalar::all(0));')" \
  '--alpha keep passes alpha through*'
mutation cpu-anchor-off-by-one cpu "$cpu_file" 'const cv::Point anchor(job.anchor_x, job.anchor_y);' \
  'const cv::Point anchor((job.anchor_x + 1) % job.kw(), job.anchor_y);' \
  'batch engine: every image filtered*'
mutation cpu-tie-direction cpu "$cpu_file" \
  'convolve_opencv(wide, wide_job, OpenCvMethod::direct_sum).convertTo(result, job.output_depth);' \
  'cv::Mat(convolve_opencv(wide, wide_job, OpenCvMethod::direct_sum) + cv::Scalar::all(job.output_depth == CV_32F ? 0.0 : 1e-9)).convertTo(result, job.output_depth);' \
  'the exact-sum reference rounds exact ties*'
mutation cpu-stale-border-value cpu "$cpu_file" 'cv::Scalar::all(job.border_value));' 'cv::Scalar::all(0));' \
  'pass rules: a constant border enters*,wrap and non-zero constant borders*'
mutation cpu-nan-one-pixel cpu "$cpu_file" "$entry" \
  "$(wrap 'if (r.depth() == CV_32F && !r.empty()) r.ptr<float>(r.rows / 2)[(r.cols / 2) * r.channels()] = std::numeric_limits<float>::quiet_NaN();')" \
  'opencv variant equals a direct cv::filter2D call*'
mutation cpu-dropped-channel cpu "$cpu_file" "$entry" \
  "$(wrap 'if (r.channels() >= 3) { std::vector<cv::Mat> p; cv::split(r, p); p[1].setTo(cv::Scalar::all(0)); cv::merge(p, r); }')" \
  'WebP lossless keeps the colour*'
mutation gpu-skip-last-row gpu "$gpu_file" '                  in.height,' \
  '                  in.height > 1 ? in.height - 1 : in.height,'
mutation gpu-skip-last-column gpu "$gpu_file" '                  in.width,' \
  '                  in.width > 1 ? in.width - 1 : in.width,'
mutation gpu-anchor-off-by-one gpu "$gpu_file" '          job.anchor_x,' '          (job.anchor_x + 1) % job.kw(),'
mutation gpu-tie-direction gpu "$round_file" '__fadd_rn(fminf(fmaxf(v, lo), hi), 12582912.0f)' \
  '__fadd_rn(fminf(fmaxf(floorf(v + 0.5f), lo), hi), 12582912.0f)'
mutation gpu-stale-border gpu "$gpu_file" \
  '          static_cast<kernels::BorderRule>(static_cast<int>(job.border)),' \
  '          static_cast<kernels::BorderRule>(0),'
mutation gpu-nan-one-pixel gpu "$gpu_file" '    launch_variant(variant, launch.args);' \
  '    launch_variant(variant, launch.args);
    if (out.depth == CV_32F) CUCONV_CUDA_TRY(cudaMemsetAsync(out.data + out.height / 2 * out.pitch, 0xFF, 4, stream));'
mutation gpu-dropped-channel gpu "$gpu_file" '  for (int c = 0; c < (keep_alpha ? 3 : in.channels); ++c) {' \
  '  for (int c = 0; c < (keep_alpha ? 3 : in.channels) - 1; ++c) {'

# Issue 61: the pass rule's block scales and fft share, the CPU-or-GPU model, the exit keeper.
rule_file=src/convolve/compare.cpp
mutation cpu-rule-tensor-block-global cpu "$rule_file" '    block_x = block_y = kTensorFloatBlock;' \
  '    block_x = input.cols;
    block_y = input.rows;' 'block rules*'
mutation cpu-rule-fft-tile-global cpu "$rule_file" \
  '    block_x = gpu::fft_tile_side(filter.width, input.cols) - filter.width + 1;' '    block_x = input.cols;' 'block rules*'
mutation cpu-rule-fft-share-off cpu "$rule_file" '(!repairs_off || stats.off_by_one_near_tie <= near_tie_allowed)' \
  '(!repairs_off || stats.off_by_one_near_tie <= stats.total_values)' 'block rules*,pass rules*'
mutation cpu-rule-tensor-border-uncounted cpu "$rule_file" \
  'if (variant == Variant::tensor && border == Border::constant) cv::max' 'if (false && border == Border::constant) cv::max' \
  'block rules*'
mutation cpu-cost-model-flipped cpu src/engine/cpu_or_gpu.hpp 'return cpu_ms < gpu_ms;' 'return cpu_ms > gpu_ms;' 'cpu or gpu*'
mutation cpu-cost-model-dft-never cpu src/engine/cpu_or_gpu.cpp 'taps < costs.dft_from_taps ?' 'taps >= 0 ?' 'cpu or gpu*'
mutation cpu-keeper-no-cloexec cpu src/cli/exit_handoff.cpp '::pipe2(parent_alive, O_CLOEXEC)' '::pipe2(parent_alive, 0)' \
  'exit hand-off*'
mutation cpu-keeper-keeps-the-rest cpu src/cli/exit_handoff.cpp '    close_between(next, UINT_MAX, limit);' \
  '    (void)next;' 'exit hand-off*'
# The served client's file checks (a server may touch only the caller's own files, relative paths
# are the caller's) and the GPU codec pipeline's byte bound (its budget; the GPU suite counts the
# bytes held outside the pipeline: test_gpu_codec_bytes.cpp).
servant_file=src/serve/file_servant.hpp
mutation cpu-serve-removes-unpublished cpu "$servant_file" 'if (published_.erase(m->path) == 0) return' \
  'if (false && published_.erase(m->path) == 0) return' 'serve file servant*'
mutation cpu-serve-temp-outside-caller cpu "$servant_file" \
  'std::string folder = slash == std::string::npos ? "." :' 'std::string folder = slash == std::string::npos ? "/tmp" :' \
  'serve file servant*'
mutation cpu-byte-budget-doubled cpu src/engine/byte_budget.hpp 'taken_ + bytes <= limit_' 'taken_ + bytes <= 2 * limit_' \
  'byte budget*'
mutation cpu-library-load-untimed cpu src/codec/opencv_codecs_lazy.cpp \
  'const common::TimedLoad timed("OpenCV image codecs");' '// the module'"'"'s load left untimed' 'verbose:*'
pipeline_file=src/engine/gpu_codec_pipeline.cpp
mutation gpu-pipeline-bound-raised gpu "$pipeline_file" 'held_bytes(2 * sizes_.batch_bytes)' 'held_bytes(8 * sizes_.batch_bytes)'
mutation gpu-pipeline-no-wait gpu "$pipeline_file" '        held_bytes.take(batch_held);' '        (void)batch_held;'

# failing_cases LOG: the test cases of a doctest console log with an ERROR (a block between two
# separator lines names its case; MESSAGE blocks have no ERROR).
failing_cases() {
  awk '/^=====/ { if (name != "" && failed) print name; name = ""; failed = 0; next }
       /^TEST CASE:/ { sub(/^TEST CASE: +/, ""); name = $0; next }
       /ERROR:/ { failed = 1 }
       END { if (name != "" && failed) print name }' "$1" | sort -u
}

if [[ "$which" == gpu-run ]]; then
  # The packed mutants on this node: no build, no git; the bundle's libraries and samples.
  logs="${OUT:-$PWD/mutation-out}"
  mkdir -p "$logs"
  work="$(mktemp -d /tmp/cuconv-mutants.XXXXXX)"
  tar -xJf "$tarball" -C "$work"
  pack="$work/gpu-mutants"
  if [[ ! -d "$pack/lib" ]]; then
    [[ -d "${LIB_DIR:-}" ]] || { echo "mutation-check: the pack has no lib/ (PACK_LIB=0): set LIB_DIR to a bundle's lib" >&2; exit 2; }
    ln -s "$(cd "$LIB_DIR" && pwd)" "$pack/lib"
  fi
  export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUCONV_SAMPLES="$pack/samples"
  run_names=()
  for i in "${!names[@]}"; do
    name="${names[$i]}"
    [[ "${suites[$i]}" == gpu && -d "$pack/mutants/$name" ]] || continue
    (( ${#only[@]} == 0 )) || [[ -n "${only[$name]:-}" ]] || continue
    run_names+=("$name")
  done
  [[ -n "${only[baseline]:-}" ]] && run_names=(baseline "${run_names[@]}")
  table=()
  missed=0
  for name in "${run_names[@]}"; do
    dir="$pack/mutants/$name"
    log="$logs/mutation-$name.log"
    echo "==== mutation-check: $name"
    # A mutant that cannot run a plain command is a broken pack, not a caught defect.
    if ! "$dir/cuconv" "$pack/samples/camera.png" "$work/sanity-$name.png" -f gauss5 --server never >"$log" 2>&1; then
      table+=("| $name | BROKEN: the packed cuconv cannot filter one image (see $log) | |")
      missed=$((missed + 1))
      continue
    fi
    set +e
    CUCONV_BIN="$dir/cuconv" timeout "${MUTANT_TIMEOUT:-240}" "$dir/cuconv_gpu_tests" ${TESTS:+"$TESTS"} \
      ${ABORT_AFTER:+"--abort-after=$ABORT_AFTER"} --no-version --minimal >"$log" 2>&1
    rc=$?
    set -e
    failing=$(failing_cases "$log" | head -5 | paste -sd ';' -)
    if [[ $rc -eq 77 ]]; then
      table+=("| $name | not run (no CUDA device) | |")
    elif [[ $rc -eq 124 ]]; then
      table+=("| $name | timed out after ${MUTANT_TIMEOUT:-240} s${failing:+ (failed so far: $failing)} | |")
    elif [[ "$name" == baseline ]]; then
      table+=("| baseline | $([[ $rc -eq 0 ]] && echo "passed (unmutated)" || echo "FAILED unmutated (exit $rc)") | $failing |")
    elif [[ $rc -ne 0 ]]; then
      table+=("| $name | caught | ${failing:-exit $rc} |")
    else
      table+=("| $name | MISSED | |")
      missed=$((missed + 1))
    fi
  done
  echo "| mutation | result | failing test cases (first 5) |"
  echo "|---|---|---|"
  printf '%s\n' "${table[@]}" | tee "$logs/mutation-table.md"
  rm -rf "$work"
  exit $(( missed > 0 ? 1 : 0 ))
fi

# selected I: whether mutation I runs in this mode.
selected() {
  local i="$1"
  if [[ "$which" == ci ]]; then
    [[ "${suites[$i]}" == cpu && -n "${cases[$i]}" ]] || return 1
  else
    [[ "$which" == all || "$which" == "${suites[$i]}" || ( "$which" == gpu-pack && "${suites[$i]}" == gpu ) ]] || return 1
  fi
  (( ${#only[@]} == 0 )) || [[ -n "${only[${names[$i]}]:-}" ]]
}
mutated=()  # the files the selected mutations change, each once
for i in "${!names[@]}"; do
  selected "$i" || continue
  [[ " ${mutated[*]} " == *" ${files[$i]} "* ]] || mutated+=("${files[$i]}")
done
(( ${#mutated[@]} > 0 )) || { echo "mutation-check: no mutation selected" >&2; exit 2; }
restore() { git checkout -- "${mutated[@]}"; }
if ! git diff --quiet -- "${mutated[@]}"; then
  echo "mutation-check: ${mutated[*]} has uncommitted changes; commit them first" >&2
  exit 2
fi
trap restore EXIT

if [[ "$which" == gpu-pack ]]; then
  # The bundle's lib/ and samples/ beside one directory per mutant (and the unmutated build).
  [[ -f "$tarball" ]] || { echo "mutation-check: no bundle $tarball (scripts/bundle.sh $build)" >&2; exit 2; }
  stage="$(mktemp -d /tmp/cuconv-mutants.XXXXXX)/gpu-mutants"
  mkdir -p "$stage/mutants"
  tar -xJf "$tarball" -C "$(dirname "$stage")"
  # PACK_LIB=0 takes samples/ alone (from a whole bundle or bundle.sh --split's second part).
  parts=(samples)
  [[ "${PACK_LIB:-1}" == 0 ]] || parts+=(lib)
  for part in "${parts[@]}"; do mv "$(dirname "$stage")"/cuconv-*/"$part" "$stage/"; done
  rm -rf "$(dirname "$stage")"/cuconv-*
  keep_binaries() {  # DIR: this build's GPU suite and CLI (front end, engine and its codec module), host symbols stripped
    mkdir -p "$1"
    cp "$build/tests/cuconv_gpu_tests" "$build/cuconv" "$build/cuconv-engine" "$build/libcuconv-opencv-codecs.so" "$1/"
    strip --strip-unneeded "$1/cuconv_gpu_tests" "$1/cuconv" "$1/cuconv-engine" 2>/dev/null || true
  }
  cmake --build "$build" -j2 --target cuconv_gpu_tests cuconv cuconv-engine >"$build/mutation-baseline.build.log" 2>&1
  keep_binaries "$stage/mutants/baseline"
fi

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
table=()
missed=0
for i in "${!names[@]}"; do
  name="${names[$i]}" suite="${suites[$i]}" file="${files[$i]}" text="${texts[$i]}" replacement="${replacements[$i]}"
  selected "$i" || continue
  TEXT="$text" REPLACEMENT="$replacement" python3 - "$file" <<'PY'
import os, sys
path = sys.argv[1]
source = open(path).read()
text, replacement = os.environ["TEXT"], os.environ["REPLACEMENT"]
if source.count(text) != 1:
    sys.exit(f"mutation-check: the text to replace occurs {source.count(text)} times in {path}")
open(path, "w").write(source.replace(text, replacement))
PY
  echo "==== mutation-check: $name ($file)"
  if [[ "$which" == gpu-pack && "$suite" != gpu ]]; then continue; fi
  if [[ "$suite" == cpu ]]; then target=cuconv_tests; else target=cuconv_gpu_tests; fi
  # The CLI tests run the engine the front end finds beside itself: it is rebuilt with the mutation.
  if ! cmake --build "$build" -j2 --target "$target" cuconv cuconv-engine >"$build/mutation-$name.build.log" 2>&1; then
    table+=("| $name | build failed (see $build/mutation-$name.build.log) | |")
    restore
    missed=$((missed + 1))
    continue
  fi
  if [[ "$which" == gpu-pack ]]; then
    keep_binaries "$stage/mutants/$name"
    table+=("| $name | built |")
    restore
    continue
  fi
  log="$build/mutation-$name.log"
  set +e
  filter="${TESTS:-}"
  [[ "$which" == ci && -z "$filter" ]] && filter="-tc=${cases[$i]}"
  "$build/tests/$target" ${filter:+"$filter"} --no-version --minimal >"$log" 2>&1
  rc=$?
  set -e
  failing=$(failing_cases "$log" | head -5 | paste -sd ';' -)
  if [[ $rc -eq 77 ]]; then
    table+=("| $name | not run (no CUDA device) | |")
  elif [[ $rc -ne 0 ]]; then
    table+=("| $name | caught | ${failing:-exit $rc} |")
  else
    table+=("| $name | MISSED | |")
    missed=$((missed + 1))
  fi
  restore
done
restore
# The unmutated build again, so the tree and the binaries agree.
cmake --build "$build" -j2 --target cuconv_tests cuconv cuconv-engine >/dev/null 2>&1 || true
if [[ "$which" == gpu-pack ]]; then
  cmake --build "$build" -j2 --target cuconv_gpu_tests >/dev/null 2>&1 || true
  mkdir -p dist
  # One large dictionary: the mutants share nearly all their bytes (the device code).
  pack_out="${PACK:-dist/gpu-mutants.tar.xz}"
  tar -C "$(dirname "$stage")" -cf - gpu-mutants | xz -T2 --lzma2=preset=6,dict=256MiB >"$pack_out"
  rm -rf "$(dirname "$stage")"
  echo "| mutation | packed |"
  echo "|---|---|"
  printf '%s\n' "${table[@]}"
  ls -l "$pack_out"
  exit $(( missed > 0 ? 1 : 0 ))
fi

echo "| mutation | result | failing test cases (first 5) |"
echo "|---|---|---|"
printf '%s\n' "${table[@]}"
exit $(( missed > 0 ? 1 : 0 ))
