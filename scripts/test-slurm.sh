#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs samples/slurm-array.sh on a real, single-node Slurm: starts munged, slurmctld and slurmd on
# this machine (Debian's slurm-wlm packages, installed when missing; everything else in a scratch
# folder: own config, key, ports, logs), submits the script as it is with sbatch (a 4-task array)
# over a folder of images, and checks that the tasks' outputs together are complete and disjoint:
# every input written exactly once, by exactly one task, each task the shard Slurm gave it.
# The daemons are stopped and the scratch folder removed on every exit.
#   scripts/test-slurm.sh [CUCONV_BIN]   (default: cuconv on PATH, else build/ci/cuconv)
# Needs root (slurmd runs jobs as their user); re-runs itself with sudo otherwise.
set -euo pipefail
# The installed cuconv runs in-process: a user's `cuconv serve` on the default socket (another
# build) must not answer for it.
export CUCONV_SERVER=never

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if (( EUID != 0 )); then
  exec sudo -E bash "$0" "$@"
fi
log() { echo "test-slurm: $*"; }

# ---- the binary the job runs: `cuconv` on the job's PATH -----------------------------------------
bin="${1:-$(command -v cuconv || echo "$repo_root/build/ci/cuconv")}"
[[ -x "$bin" ]] || { echo "test-slurm: no cuconv binary at '$bin' (build it or install the .deb)" >&2; exit 1; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

packages=(slurmctld slurmd slurm-client munge)
missing=()
for pkg in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" == "install ok installed" ]] || missing+=("$pkg")
done
if (( ${#missing[@]} > 0 )); then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

work="$(mktemp -d /tmp/cuconv-slurm.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  local rc=$?
  if [[ -n "${job_id:-}" ]]; then scancel "$job_id" 2>/dev/null || true; fi
  # Stop the daemons this script started, newest first, by their own process ids.
  for (( i = ${#pids[@]} - 1; i >= 0; i-- )); do kill "${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if (( rc != 0 )); then
    for f in "$work"/*.log "$work"/logs/*; do
      [[ -f "$f" ]] && { echo "---- $f (last lines)"; tail -n 20 "$f"; }
    done
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- munge: a fresh key and its own socket -----------------------------------------------------
mkdir -p "$work"/{munge,state,spool,logs,in,out,bin}
chown munge:munge "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
socket="$work/munge/munge.socket"
setpriv --reuid=munge --regid=munge --init-groups munged --foreground --key-file="$work/munge/munge.key" --socket="$socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/munged.seed" >"$work/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [[ -S "$socket" ]] && break; sleep 0.1; done
[[ -S "$socket" ]] || { echo "test-slurm: munged did not start" >&2; exit 1; }

# ---- slurm.conf: this host as controller and only node, no cgroups, no accounting ----------------
host="$(hostname -s)"
port_base=$(( 20000 + RANDOM % 20000 ))
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=cuconvtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port_base
SlurmdPort=$(( port_base + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# In the foreground (-D) so that this script owns them; their messages go to the log files, which
# are printed when the test fails.
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -N "$host" -f "$SLURM_CONF" >"$work/slurmd.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do
  state="$(sinfo -h -N -o '%t' 2>/dev/null | head -n1 || true)"
  [[ "$state" == idle ]] && break
  sleep 0.5
done
[[ "$state" == idle ]] || { echo "test-slurm: the node did not become idle (state '$state')" >&2; exit 1; }
log "slurm up: $(sinfo -h -N -o '%N %t cpus=%c')"

# ---- inputs: more images than tasks, not a multiple of 4 -----------------------------------------
for i in $(seq -w 1 9); do cp "$repo_root/samples/camera_crop_40x48.png" "$work/in/img_$i.png"; done
cp "$repo_root/samples/camera_f32.tif" "$repo_root/samples/logo.png" "$repo_root/samples/chessboard_GRAY_U16.tif" "$work/in/"
mapfile -t inputs < <(find "$work/in" -maxdepth 1 -type f -printf '%f\n' | sort)
ln -s "$bin" "$work/bin/cuconv"

# ---- the job: samples/slurm-array.sh exactly as the README shows it ------------------------------
start=$SECONDS
job_id="$(cd "$work" && PATH="$work/bin:$PATH" sbatch --parsable --output="$work/logs/%A_%a.out" \
            "$repo_root/samples/slurm-array.sh" "$work/in" "$work/out")"
job_id="${job_id%%;*}"
array_id="$job_id"
log "submitted array job $job_id"
for _ in $(seq 600); do
  [[ -z "$(squeue -h -j "$job_id" 2>/dev/null)" ]] && break
  sleep 0.5
done
[[ -z "$(squeue -h -j "$job_id" 2>/dev/null)" ]] || { echo "test-slurm: job $job_id still queued or running after 300 s" >&2; exit 1; }
log "array job finished in $(( SECONDS - start )) s"
job_id=""

# ---- checks ------------------------------------------------------------------------------------
failures=0
fail() { echo "test-slurm: $*" >&2; failures=$((failures + 1)); }
# Tasks and their exit codes, from slurmctld (no accounting database here).
for t in 0 1 2 3; do
  task_log="$work/logs/${array_id}_$t.out"
  [[ -f "$task_log" ]] || fail "task $t left no log: did it run?"
  if [[ -s "$task_log" ]]; then echo "---- task $t output:"; cat "$task_log"; fi
  [[ -f "$work/out/summary-$t.json" ]] || fail "task $t wrote no summary"
done
# The inputs each task wrote (status ok) and the shard it ran, from its JSON summary: the
# pretty-printed objects of "files" are read key by key, whatever their order.
written_by() {
  awk '/"files": \[/ { in_files = 1; next }
       in_files && /^  \]/ { in_files = 0 }
       in_files && /^    \{/ { input = ""; status = "" }
       in_files && /^      "input":/ { input = $0; sub(/^[^:]*: "/, "", input); sub(/",?$/, "", input) }
       in_files && /^      "status":/ { status = $0; sub(/^[^:]*: "/, "", status); sub(/",?$/, "", status) }
       in_files && /^    \}/ && status == "ok" { print input }' "$1"
}
all_written=""
for t in 0 1 2 3; do
  summary="$work/out/summary-$t.json"
  [[ -f "$summary" ]] || continue
  shard="$(sed -n 's/^  "shard": "\(.*\)",$/\1/p' "$summary")"
  [[ "$shard" == "$t/4" ]] || fail "task $t ran shard '$shard', expected $t/4"
  mine="$(written_by "$summary")"
  log "task $t (shard $shard) wrote $(grep -c . <<<"$mine" || true): $(xargs -r -n1 basename <<<"$mine" | tr '\n' ' ')"
  all_written+="$mine"$'\n'
done
dups="$(grep . <<<"$all_written" | xargs -r -n1 basename | sort | uniq -d)"
[[ -z "$dups" ]] || fail "inputs written by more than one task: $dups"
union="$(grep . <<<"$all_written" | xargs -r -n1 basename | sort -u)"
[[ "$union" == "$(printf '%s\n' "${inputs[@]}")" ]] || fail "the tasks wrote $(grep -c . <<<"$union" || true) of ${#inputs[@]} inputs"
# The output folder: one output per input and nothing else besides the summaries.
outputs="$(find "$work/out" -maxdepth 1 ! -type d ! -name 'summary-*.json' -printf '%f\n' | sort)"
[[ "$outputs" == "$(printf '%s\n' "${inputs[@]}")" ]] || fail "output folder holds: $(tr '\n' ' ' <<<"$outputs")"

if (( failures > 0 )); then
  echo "test-slurm: $failures problem(s)" >&2
  exit 1
fi
log "OK: ${#inputs[@]} inputs, 4 array tasks, each input written once (complete and disjoint)"
