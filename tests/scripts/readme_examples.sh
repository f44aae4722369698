#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every command example of a Markdown file (the README) with the built cuconv on PATH.
#
#   readme_examples.sh CUCONV MARKDOWN SAMPLES_DIR [REQUIRED_COMMAND...]
#
# Fenced blocks, by their language:
#   ```sh     a command example: run with `bash -euo pipefail` in a fresh directory holding a copy
#             of SAMPLES_DIR as samples/ and photos/, a folder of three JPEGs; it must exit 0.
#   ```text, ```json   not commands (a synopsis, an output): not run.
#   anything else, or no language: an error (mark the block).
# An HTML comment on the line before an sh block changes how it is run:
#   <!-- readme-test: skip REASON -->  not run here (it installs, or needs a cluster); REASON printed.
#   <!-- readme-test: gpu -->          run when cuconv finds a GPU; otherwise skipped, with why.
# Each REQUIRED_COMMAND must be the text of a line of some sh block (the README's set-up
# commands, which CI runs through .ci/run). Exit status: 0 when every run example passed and
# every block is accounted for, 1 otherwise; "FAIL line N: ..." names each failure.
set -uo pipefail

if (( $# < 3 )); then
  echo "usage: $0 CUCONV MARKDOWN SAMPLES_DIR [REQUIRED_COMMAND...]" >&2
  exit 2
fi
cuconv=$(realpath "$1")
markdown=$2
samples=$(realpath "$3")
shift 3
required=("$@")

work=$(mktemp -d "${TMPDIR:-/tmp}/readme-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$cuconv" "$work/bin/cuconv"
export PATH="$work/bin:$PATH"

failures=0
fail() { echo "FAIL line $1: $2"; failures=$((failures + 1)); }

# The directory each example starts in: samples/, and photos/ with JPEGs made from samples.
fixture="$work/fixture"
mkdir -p "$fixture/photos"
cp -R "$samples" "$fixture/samples"
for name in coffee chelsea astronaut; do
  if ! made=$(cuconv "$samples/$name.png" "$fixture/photos/$name.jpg" --filter 1x1:1 --variant opencv -q 2>&1); then
    echo "FAIL: could not make the fixture photos/$name.jpg with $cuconv: $made"
    exit 1
  fi
done

# Whether cuconv finds a usable GPU: an explicit GPU variant exits 0 with one, 5 without.
gpu_probe_output=$(cuconv "$samples/camera_crop_40x48.png" "$work/probe.png" --filter box3 --variant fast 2>&1)
case $? in
  0) gpu_reason="" ;;
  5) gpu_reason="no usable GPU here (${gpu_probe_output#cuconv: error: })" ;;
  *) echo "FAIL: the GPU probe exited neither 0 nor 5: $gpu_probe_output"; exit 1 ;;
esac

run_block() {  # LINE BODY
  local line=$1 body=$2 dir="$work/block-$1" output status
  cp -R "$fixture" "$dir"
  output=$(cd "$dir" && bash -euo pipefail -c "$body" 2>&1)
  status=$?
  if (( status != 0 )); then
    fail "$line" "the example exited $status:"
    printf '%s\n' "$body" | sed 's/^/    $ /'
    printf '%s\n' "$output" | sed 's/^/    | /'
    return
  fi
  echo "ran     line $line: $(head -n1 <<<"$body")"
  ran=$((ran + 1))
}

ran=0
skipped=0
not_commands=0
sh_text=""
in_block=0
line_no=0
previous=""  # the last non-blank line before the current block's opening fence
while IFS= read -r line || [[ -n $line ]]; do
  line_no=$((line_no + 1))
  if (( in_block )); then
    if [[ $line =~ ^\`\`\`[[:space:]]*$ ]]; then
      in_block=0
      case $lang in
        sh)
          sh_text+="$body"$'\n'
          if [[ $marker =~ ^\<!--\ readme-test:\ skip\ (.+)\ --\>$ ]]; then
            echo "skipped line $start: ${BASH_REMATCH[1]}"
            skipped=$((skipped + 1))
          elif [[ $marker == "<!-- readme-test: gpu -->" ]]; then
            if [[ -n $gpu_reason ]]; then
              echo "skipped line $start: needs a GPU: $gpu_reason"
              skipped=$((skipped + 1))
            else
              run_block "$start" "$body"
            fi
          elif [[ $marker == "<!-- readme-test:"* ]]; then
            fail "$start" "unknown marker '$marker' (readme-test: skip REASON, or readme-test: gpu)"
          else
            run_block "$start" "$body"
          fi
          ;;
        text | json) not_commands=$((not_commands + 1)) ;;
        *) fail "$start" "fenced block with language '${lang}': mark it sh (a command to run) or text (not a command)" ;;
      esac
    else
      body+="${body:+$'\n'}$line"
    fi
  elif [[ $line =~ ^\`\`\`(.*)$ ]]; then
    in_block=1
    start=$line_no
    lang=${BASH_REMATCH[1]}
    lang=${lang%%[[:space:]]*}
    body=""
    marker=""
    [[ $previous == "<!--"* ]] && marker=$previous
  elif [[ -n ${line//[[:space:]]/} ]]; then
    previous=$line
  fi
done <"$markdown"
(( in_block )) && fail "$start" "fenced block not closed"

for command in "${required[@]}"; do
  grep -qxF -- "$command" <<<"$sh_text" || fail 0 "no sh block has the line '$command'"
done
(( ran > 0 )) || fail 0 "no example was run (did the fence syntax change?)"

echo "$markdown: $ran example(s) run, $skipped skipped, $not_commands non-command block(s), $failures failure(s)"
(( failures == 0 ))
