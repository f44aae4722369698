#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#SBATCH --job-name=cuconv
#SBATCH --array=0-3
#SBATCH --cpus-per-task=1
##SBATCH --gres=gpu:1    (on a GPU cluster: delete one '#' to give each task a GPU)
# Filter every image of IN_DIR into OUT_DIR with 4 Slurm array tasks:
#   sbatch samples/slurm-array.sh IN_DIR OUT_DIR [FILTER]
# Each task takes its quarter of the sorted inputs (cuconv reads SLURM_ARRAY_TASK_ID and
# SLURM_ARRAY_TASK_COUNT as --shard) and writes a JSON summary. Submitting it again finishes
# a job that timed out or failed: outputs that exist are skipped.
set -euo pipefail
in_dir="$1" out_dir="$2" filter="${3:-gauss5}"

cuconv --out-dir "$out_dir" "$in_dir" --filter "$filter" --jobs "${SLURM_CPUS_PER_TASK:-1}" -q \
       --json "$out_dir/summary-$SLURM_ARRAY_TASK_ID.json"
