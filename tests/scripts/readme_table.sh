#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README's benchmark table against the JSON it links: every row scripts/kernel_tables.py makes of
# that JSON must stand in README.md as it is. Usage: readme_table.sh PYTHON (in the source tree).
set -euo pipefail
python=$1
json=$(grep -o 'bench/results/h[0-9]*-kernels-[0-9a-f]*-all.json' README.md | head -1)
[[ -n $json ]] || { echo "README.md links no bench/results/h*-kernels-*-all.json"; exit 1; }
rows=$("$python" scripts/kernel_tables.py "$json" - readme 2>/dev/null)
[[ $(wc -l <<< "$rows") -gt 2 ]] || { echo "kernel_tables.py made no table of $json"; exit 1; }
missing=$(grep -Fxv -f README.md <<< "$rows" || true)
if [[ -n $missing ]]; then
  printf 'rows of %s not in README.md:\n%s\n' "$json" "$missing"
  exit 1
fi
echo "README.md holds the $(wc -l <<< "$rows") lines of $json's table"
# The roofline chart the README links is drawn from the same JSON (scripts/roofline_chart.py).
chart=$(grep -o 'bench/results/roofline-[a-z0-9]*-[0-9a-f]*\.png' README.md | head -1)
[[ -n $chart && -f $chart ]] || { echo "README.md links no bench/results/roofline-*.png that exists"; exit 1; }
json_commit=$(sed -E 's#.*-kernels-([0-9a-f]+)-all\.json#\1#' <<< "$json")
chart_commit=$(sed -E 's#.*-([0-9a-f]+)\.png#\1#' <<< "$chart")
[[ $json_commit == "$chart_commit" ]] || { echo "$chart is not drawn from $json (commit $chart_commit, not $json_commit)"; exit 1; }
echo "$chart is drawn from the same run"
