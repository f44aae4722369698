#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU JPEG path against OpenCV's codec on a GPU node (issue 25), on a corpus of about
# 2000x2000 RGB JPEGs written at quality 90:
#   gpu-F        cuconv --codec gpu    --filter F   (nvJPEG decode, filter on the device, nvJPEG encode)
#   opencv-F     cuconv --codec opencv --filter F   (today's path: OpenCV decode/encode, GPU filter)
#   auto-F       cuconv --codec auto   --filter F   (the default; F the first filter only)
#   gpu-none     cuconv --codec gpu    --no-filter  (the pipeline's own floor)
#   opencv-none  cuconv --codec opencv --no-filter
#   floor        cuconv_nvjpeg_floor: nvJPEG decode + encode of the same files, nothing else
# for F in FILTERS, REPEAT interleaved rounds. Prints each run and the medians; writes
# $OUT/jpeg-bench/jpeg-bench.json (each cuconv run's own summary beside it).
#
#   scripts/jpeg-bench.sh BIN_DIR [N] [CORPUS_DIR]
#
#   BIN_DIR     an unpacked bundle's bin/ or a build folder (cuconv, cuconv_make_corpus and
#               bench/cuconv_nvjpeg_floor or cuconv_nvjpeg_floor)
#   N           images (default 200); CORPUS_DIR default ${TMPDIR:-/tmp}/cuconv-jpeg-corpus-N
#   FILTERS     default "gauss5 gaussian:7,3";  REPEAT rounds (default 3);  OUT results folder (default .)
#   LARGE       also run the first filter under each codec on LARGE x N files (default 5; 0: not):
#               the corpus again under other names (hard links). The marginal rate,
#               (LARGE*N - N) / (wall on LARGE*N - wall on N), is the pipeline's steady rate
#               without the process's start and set-up, which a batch of N pays once.
#   CUCONV_ARGS more options for every cuconv run, e.g. "--devices all --jobs 16"
#   FLOOR_ARGS  more options for cuconv_nvjpeg_floor, e.g. "--encoders 4 --batch 64"
set -euo pipefail

if (( $# < 1 )); then
  echo "usage: $0 BIN_DIR [N] [CORPUS_DIR]" >&2
  exit 2
fi
bin="$(cd "$1" && pwd)"
count="${2:-200}"
corpus="${3:-${TMPDIR:-/tmp}/cuconv-jpeg-corpus-$count}"
read -r -a filters <<<"${FILTERS:-gauss5 gaussian:7,3}"
rounds="${REPEAT:-3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
results="${OUT:-.}/jpeg-bench"
mkdir -p "$results"
read -r -a extra_args <<<"${CUCONV_ARGS:-}"
read -r -a floor_args <<<"${FLOOR_ARGS:-}"
floor_tool=""
for candidate in "$bin/cuconv_nvjpeg_floor" "$bin/bench/cuconv_nvjpeg_floor"; do
  [[ -x "$candidate" ]] && { floor_tool="$candidate"; break; }
done
[[ -n "$floor_tool" ]] || { echo "jpeg-bench: cuconv_nvjpeg_floor not found in $bin" >&2; exit 2; }

EXT=.jpg QUALITY=90 bash "$here/make-batch-corpus.sh" "$count" "$corpus" "$bin"
images="$(find "$corpus" -maxdepth 1 -name 'corpus_*.jpg' | wc -l)"
large="${LARGE:-5}"
large_corpus="$corpus-x$large"
if (( large > 1 )); then
  mkdir -p "$large_corpus"
  for ((copy = 0; copy < large; ++copy)); do
    for f in "$corpus"/corpus_*.jpg; do
      target="$large_corpus/copy${copy}_$(basename "$f")"
      [[ -e "$target" ]] || ln "$f" "$target" 2>/dev/null || cp "$f" "$target"
    done
  done
fi
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
echo "jpeg-bench: $images JPEGs (q90) in $corpus, filters ${filters[*]}, ${gpu:-no GPU}, $(nproc) CPU threads"

runs_file="$results/runs.jsonl"
: >"$runs_file"
declare -i failed_runs=0
# One cuconv run: wall time from outside, pipeline time and the decoders from its summary.
bench() {
  local name="$1" round="$2"
  shift 2
  local scratch summary rc=0 start end
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-jpeg-bench.XXXXXX")"
  summary="$results/$name-r$round.json"
  local input="$corpus" n="$images"
  if [[ "$name" == *-large ]]; then input="$large_corpus" n=$((images * large)); fi
  start="$(date +%s%N)"
  "$bin/cuconv" --out-dir "$scratch" --json "$summary" "$@" "${extra_args[@]}" "$input" || rc=$?
  end="$(date +%s%N)"
  rm -rf "$scratch"
  (( rc == 0 )) || failed_runs+=1
  python3 - "$name" "$round" "$rc" "$start" "$end" "$n" "$summary" "$*" >>"$runs_file" <<'PY'
import collections, json, sys
name, rnd, rc, start, end, images, summary, args = sys.argv[1:]
wall = (int(end) - int(start)) / 1e9
run = {"name": name, "round": int(rnd), "args": args, "exit_code": int(rc), "wall_s": wall,
       "images_per_s": int(images) / wall if wall > 0 else 0}
try:
    s = json.load(open(summary))
    run["pipeline_s"] = s["totals"]["wall_ms"] / 1000
    run["pipeline_images_per_s"] = s["totals"]["images_per_s"]
    run["decoders"] = dict(collections.Counter(f["decoder"] for f in s["files"]))
    run["images"] = int(images)
    if s["totals"].get("gpu_codec", {}).get("batches"):
        run["gpu_codec"] = s["totals"]["gpu_codec"]
except Exception as e:  # a failed run may have no summary
    run["summary_error"] = str(e)
print(json.dumps(run))
print("jpeg-bench: %-22s round %d: %7.3f s %8.1f images/s, pipeline %8.1f images/s, decoders %s (exit %d)"
      % (name, run["round"], wall, run["images_per_s"], run.get("pipeline_images_per_s", 0), run.get("decoders"),
         run["exit_code"]), file=sys.stderr)
PY
}
floor() {
  local round="$1" line rc=0
  line="$("$floor_tool" "$corpus" "${floor_args[@]}")" || rc=$?
  if (( rc != 0 )); then
    failed_runs+=1
    echo "{\"name\": \"floor\", \"round\": $round, \"exit_code\": $rc}" >>"$runs_file"
    return
  fi
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(name="floor", round=int(sys.argv[2]), exit_code=0); print(json.dumps(r))' \
    "$line" "$round" >>"$runs_file"
  echo "jpeg-bench: floor (nvJPEG only)      round $round: $line"
}

# Accuracy on the corpus (nvJPEG against OpenCV: decoded pixels, the filter's pass rule, PSNR at
# quality 95), once.
accuracy_line="$("$floor_tool" "$corpus" --accuracy --filter "${filters[0]}" --quality 95)" || failed_runs+=1
echo "jpeg-bench: accuracy: ${accuracy_line:-failed}"
printf '%s\n' "${accuracy_line:-null}" > "$results/accuracy.json"

for ((round = 1; round <= rounds; ++round)); do
  floor "$round"
  for codec in gpu opencv; do
    bench "$codec-none" "$round" --codec "$codec" --no-filter
    for f in "${filters[@]}"; do bench "$codec-$f" "$round" --codec "$codec" --filter "$f"; done
    if (( large > 1 )); then bench "$codec-${filters[0]}-large" "$round" --codec "$codec" --filter "${filters[0]}"; fi
  done
  # The default, --codec auto: OpenCV's codec below its threshold; above it, OpenCV's for the
  # files read while nvJPEG sets up, the GPU's for the rest.
  bench "auto-${filters[0]}" "$round" --codec auto --filter "${filters[0]}"
  if (( large > 1 )); then bench "auto-${filters[0]}-large" "$round" --codec auto --filter "${filters[0]}"; fi
done

python3 - "$runs_file" "$results/jpeg-bench.json" "$images" "$corpus" "$gpu" "${CUCONV_ARGS:-}" "${filters[@]}" <<'PY'
import json, statistics, sys
runs_file, out, images, corpus, gpu, extra, *filters = sys.argv[1:]
runs = [json.loads(l) for l in open(runs_file) if l.strip()]
ok = [r for r in runs if r.get("exit_code") == 0]
def med(name, key):
    v = [r[key] for r in ok if r["name"] == name and key in r]
    return statistics.median(v) if v else None
medians = {n: {"images_per_s": med(n, "images_per_s"), "pipeline_images_per_s": med(n, "pipeline_images_per_s"),
               "wall_s": med(n, "wall_s")} for n in sorted({r["name"] for r in ok if r["name"] != "floor"})}
floor = {k: med("floor", k) for k in ("decode_images_per_s", "encode_images_per_s", "decode_encode_images_per_s", "decode_encode_s")}
g5 = medians.get(f"gpu-{filters[0]}", {}).get("images_per_s") if filters else None
checks = {}
if g5:
    checks["gpu_first_filter_images_per_s"] = g5
    if len(filters) > 1 and medians.get(f"gpu-{filters[1]}", {}).get("images_per_s"):
        checks["second_over_first_filter"] = medians[f"gpu-{filters[1]}"]["images_per_s"] / g5
    if floor["decode_encode_images_per_s"]:
        checks["floor_over_gpu_first_filter_wall"] = floor["decode_encode_images_per_s"] / g5
        p = medians[f"gpu-{filters[0]}"]["pipeline_images_per_s"]
        if p: checks["floor_over_gpu_first_filter_pipeline"] = floor["decode_encode_images_per_s"] / p
    o = medians.get(f"opencv-{filters[0]}", {}).get("images_per_s")
    if o: checks["gpu_over_opencv_codec"] = g5 / o
# Steady rate: the images a larger batch adds over the time it adds (start-up and set-up cancel).
for codec in ("gpu", "opencv"):
    small, big = medians.get(f"{codec}-{filters[0]}"), medians.get(f"{codec}-{filters[0]}-large")
    nbig = [r["images"] for r in ok if r["name"] == f"{codec}-{filters[0]}-large" and "images" in r]
    if small and big and nbig and big["wall_s"] > small["wall_s"]:
        checks[f"{codec}_{filters[0]}_marginal_images_per_s"] = (nbig[0] - int(images)) / (big["wall_s"] - small["wall_s"])
m = checks.get(f"gpu_{filters[0]}_marginal_images_per_s")
if m and floor["decode_encode_images_per_s"]:
    checks["floor_over_gpu_marginal"] = floor["decode_encode_images_per_s"] / m
import os
accuracy_path = os.path.join(os.path.dirname(out), "accuracy.json")
try:
    accuracy = json.load(open(accuracy_path))
except Exception:
    accuracy = None
report = {"images": int(images), "corpus": corpus, "quality_of_corpus": 90, "gpu": gpu, "extra_args": extra,
          "filters": filters, "medians": medians, "floor": floor, "ratios": checks, "accuracy": accuracy, "runs": runs}
json.dump(report, open(out, "w"), indent=2)
print("jpeg-bench: medians (images/s, whole process):")
for n, m in medians.items(): print(f"  {n:<22} {m['images_per_s']:8.1f}  (pipeline only {m['pipeline_images_per_s'] or 0:8.1f})")
print(f"  floor (nvJPEG decode+encode) {floor['decode_encode_images_per_s']}")
print("jpeg-bench: ratios", json.dumps(checks))
print("jpeg-bench:", out)
PY
rm -f "$runs_file"
if (( failed_runs > 0 )); then
  echo "jpeg-bench: $failed_runs run(s) failed; see their JSON summaries" >&2
  exit 1
fi
