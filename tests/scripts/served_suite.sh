#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CPU suite's command-line test cases once more, through a server that shares nothing with them
# but its socket: a `cuconv serve` started in an empty folder of its own, with umask 077 and a
# TMPDIR of its own, and (as root, where `unshare -m` works) in a mount namespace of its own in
# which the tests' temporary folders, the samples and filters/ are hidden under empty tmpfs mounts,
# so a command passes only if the server reaches every file through its client. Every cuconv the
# test cases start says CUCONV_SERVER=always, so a command that did not reach the server fails (exit
# 5) instead of quietly running in-process. The test cases are the same as in-process (they check
# outputs, messages and exit codes), so served and in-process answers are held to one standard.
# Passes when the suite passes, the server's log shows at least MIN_SERVED commands and no internal
# error or sanitizer report, and the server exits 0 on SIGTERM.
#   tests/scripts/served_suite.sh CUCONV CUCONV_TESTS MIN_SERVED [doctest options...]
# CUCONV_SERVED_HIDE: extra folders to hide from the server (colon-separated), beside the tests'
# temporary root, the samples (CUCONV_SAMPLES or samples/) and filters/.
set -uo pipefail
cuconv="$(realpath "$1")" tests="$(realpath "$2")" min_served="$3"
shift 3
work="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-served-suite.XXXXXX")"
chmod 700 "$work"
mkdir -p "$work/server-home" "$work/server-tmp" "$work/tests-tmp"
touch "$work/tests-tmp/.visible-to-tests-only"
server=
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "served suite: $*" >&2; [[ -s "$work/serve.log" ]] && tail -30 "$work/serve.log" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
samples="${CUCONV_SAMPLES:-$root/samples}"
hidden=("$work/tests-tmp" "$samples" "$root/filters")
IFS=: read -r -a extra <<<"${CUCONV_SERVED_HIDE:-}"
for folder in "${extra[@]}"; do [[ -n "$folder" ]] && hidden+=("$folder"); done

# The server's own start: its folder, umask and TMPDIR; in its own mount namespace where it can.
serve=(env TMPDIR="$work/server-tmp" "$cuconv" serve --socket "$work/socket" --idle-exit 0 --max-clients 64)
if [[ $(id -u) == 0 ]] && unshare -m --propagation private true 2>/dev/null; then
  namespace=own
  mounts=""
  for folder in "${hidden[@]}"; do mounts+="mount -t tmpfs -o mode=0700 cuconv-hidden '$folder' && "; done
  (cd "$work/server-home" && umask 077 &&
     exec unshare -m --propagation private sh -c "${mounts}exec \"\$@\"" sh "${serve[@]}") 2>"$work/serve.log" &
else
  namespace=shared
  echo "served suite: not root or no unshare -m here: the server shares the tests' mount namespace"
  (cd "$work/server-home" && umask 077 && exec "${serve[@]}") 2>"$work/serve.log" &
fi
server=$!
for _ in $(seq 200); do [[ -S "$work/socket" ]] && break; sleep 0.05; done
[[ -S "$work/socket" ]] || fail "the server did not start"
if [[ $namespace == own ]]; then
  # The server's view of the file system (/proc/PID/root resolves in its mount namespace).
  [[ -e "/proc/$server/root$work/tests-tmp/.visible-to-tests-only" ]] && fail "the tests' folder is visible to the server"
  [[ -e "$work/tests-tmp/.visible-to-tests-only" ]] || fail "the tests' folder is hidden from the tests"
  [[ -z "$(ls -A "/proc/$server/root$samples")" ]] || fail "the samples are visible to the server"
  echo "served suite: the server runs in $work/server-home, umask 077, TMPDIR $work/server-tmp, and sees none of: ${hidden[*]}"
fi

CUCONV_SOCKET="$work/socket" CUCONV_SERVER=always TMPDIR="$work/tests-tmp" "$tests" "$@"
rc=$?
kill -TERM "$server"
wait "$server"
server_rc=$?
server=
served="$(grep -c ' -> exit ' "$work/serve.log" || true)"
echo "served suite: the test cases exited $rc; the server ran $served command(s) and exited $server_rc"
problems="$(grep -E 'internal error|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|Segmentation fault' "$work/serve.log" || true)"
[[ -z "$problems" ]] || fail "the server's log reports:
$problems"
(( server_rc == 0 )) || fail "the server exited $server_rc on SIGTERM (expected 0)"
(( rc != 0 || served >= min_served )) || fail "expected at least $min_served served commands"
exit "$rc"
