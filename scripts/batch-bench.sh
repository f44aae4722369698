#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Batch-mode throughput on a GPU node, on one corpus of about 2000x2000 RGB images:
#   (a) no-filter  decode + encode only (cuconv --no-filter): the floor the pipeline cannot beat
#   (b) auto       --variant auto (the GPU)
#   (c) opencv     --variant opencv (cv::filter2D on the CPU)
# Each prints its wall time and images/s; all three go to $OUT/batch-bench/batch-bench.json, each
# run's own summary (cuconv --json, NAME-rROUND.json) beside it.
#
#   scripts/batch-bench.sh BIN_DIR [N] [CORPUS_DIR]
#
#   BIN_DIR     an unpacked bundle's bin/ (or a build folder with cuconv and cuconv_make_corpus)
#   N           images (default 200); CORPUS_DIR default ${TMPDIR:-/tmp}/cuconv-corpus-N, made
#               with scripts/make-batch-corpus.sh when missing and reused after that
#   FILTER      filter of (b) and (c) (default gauss5);  OUT  results folder (default .)
#   CUCONV_ARGS more options for every run, e.g. "--devices all --jobs 16"
#   REPEAT      rounds of the three runs (default 3, interleaved so drift hits all alike); the
#               summary line gives each run's median wall time and auto / no-filter
#
# The outputs are written to a scratch folder under ${TMPDIR:-/tmp} and deleted after each run.
set -euo pipefail

if (( $# < 1 )); then
  echo "usage: $0 BIN_DIR [N] [CORPUS_DIR]" >&2
  exit 2
fi
bin="$(cd "$1" && pwd)"
count="${2:-200}"
corpus="${3:-${TMPDIR:-/tmp}/cuconv-corpus-$count}"
filter="${FILTER:-gauss5}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
results="${OUT:-.}/batch-bench"
mkdir -p "$results"
read -r -a extra_args <<<"${CUCONV_ARGS:-}"

bash "$here/make-batch-corpus.sh" "$count" "$corpus" "$bin"
images="$(find "$corpus" -maxdepth 1 -name 'corpus_*' | wc -l)"

gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
echo "batch-bench: $images images in $corpus, filter $filter, ${gpu:-no GPU}, $(nproc) CPU threads"

runs=()
bench() {
  local name="$1"
  shift
  local scratch
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-batch-bench.XXXXXX")"
  local start end rc=0
  start="$(date +%s%N)"
  "$bin/cuconv" --out-dir "$scratch" --json "$results/$name-r$round.json" "$@" "${extra_args[@]}" "$corpus" || rc=$?
  end="$(date +%s%N)"
  rm -rf "$scratch"
  local wall_s per_s
  wall_s="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
  per_s="$(awk -v n="$images" -v s="$wall_s" 'BEGIN { printf "%.2f", (s > 0 ? n / s : 0) }')"
  # Where the process's time went, from its own summary: main() to the pipeline (startup), the
  # pipeline, and the rest (loading before main(), the summary, exit and CUDA's teardown).
  local split
  split="$(python3 - "$results/$name-r$round.json" "$wall_s" <<'PY' 2>/dev/null || echo '"startup_ms": null, "gpu_init_ms": null, "pipeline_ms": null, "outside_ms": null'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
outside = float(sys.argv[2]) * 1000 - t["startup_ms"] - t["wall_ms"]
print(f'"startup_ms": {t["startup_ms"]:.1f}, "gpu_init_ms": {t["gpu_init_ms"]:.1f}, '
      f'"pipeline_ms": {t["wall_ms"]:.1f}, "outside_ms": {outside:.1f}')
PY
)"
  printf 'batch-bench: %-10s %8s s  %8s images/s  (exit %d)  %s\n' "$name" "$wall_s" "$per_s" "$rc" "${split//\"/}"
  runs+=("{\"name\": \"$name\", \"round\": $round, \"args\": \"$*\", \"wall_s\": $wall_s, \"images_per_s\": $per_s, \"exit_code\": $rc, $split}")
  # A failed run's time is no measurement: it stays in the JSON (with its exit code), not in the
  # medians, and the script fails at the end.
  if (( rc == 0 )); then walls["$name"]+="$wall_s "; else failed_runs+=1; fi
}

declare -A walls
declare -i failed_runs=0
for ((round = 1; round <= ${REPEAT:-3}; ++round)); do
  bench no-filter --no-filter
  bench auto --filter "$filter" --variant auto
  bench opencv --filter "$filter" --variant opencv
done
median() { tr ' ' '\n' <<<"$1" | { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
floor_s="$(median "${walls[no-filter]:-}")"
auto_s="$(median "${walls[auto]:-}")"
opencv_s="$(median "${walls[opencv]:-}")"
ratio="$(awk -v a="$auto_s" -v b="$floor_s" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
echo "batch-bench: median of ${REPEAT:-3}: no-filter $floor_s s, auto $auto_s s, opencv $opencv_s s; auto / no-filter = $ratio"

{
  printf '{\n  "images": %d,\n  "corpus": "%s",\n  "filter": "%s",\n  "gpu": "%s",\n' \
    "$images" "$corpus" "$filter" "$gpu"
  printf '  "cpu_threads": %d,\n  "extra_args": "%s",\n' "$(nproc)" "${CUCONV_ARGS:-}"
  printf '  "median_wall_s": {"no-filter": %s, "auto": %s, "opencv": %s},\n  "auto_over_no_filter": %s,\n  "runs": [\n' \
    "$floor_s" "$auto_s" "$opencv_s" "$ratio"
  for i in "${!runs[@]}"; do
    printf '    %s%s\n' "${runs[$i]}" "$([[ $i -lt $((${#runs[@]} - 1)) ]] && echo ,)"
  done
  printf '  ]\n}\n'
} >"$results/batch-bench.json"
echo "batch-bench: $results/batch-bench.json"
if (( failed_runs > 0 )); then
  echo "batch-bench: $failed_runs run(s) failed; see their JSON summaries" >&2
  exit 1
fi
