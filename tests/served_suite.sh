#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CPU suite's command-line test cases once more, through a server: a `cuconv serve` on a
# private socket, and every cuconv the test cases start with CUCONV_SERVER=always, so a command
# that did not reach the server fails (exit 5) instead of quietly running in-process. The test
# cases are the same as in-process (they check outputs, messages and exit codes), so served and
# in-process answers are held to one standard. Passes when the suite passes and the server's log
# shows at least MIN_SERVED commands.
#   tests/served_suite.sh CUCONV CUCONV_TESTS MIN_SERVED [doctest options...]
set -uo pipefail
cuconv="$1" tests="$2" min_served="$3"
shift 3
work="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-served-suite.XXXXXX")"
chmod 700 "$work"
server=
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$cuconv" serve --socket "$work/socket" --idle-exit 0 --max-clients 64 2>"$work/serve.log" &
server=$!
for _ in $(seq 200); do [[ -S "$work/socket" ]] && break; sleep 0.05; done
[[ -S "$work/socket" ]] || { echo "served suite: the server did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }

CUCONV_SOCKET="$work/socket" CUCONV_SERVER=always "$tests" "$@"
rc=$?
served="$(grep -c ' -> exit ' "$work/serve.log" || true)"
echo "served suite: the test cases exited $rc; the server ran $served command(s)"
if (( rc == 0 && served < min_served )); then
  echo "served suite: expected at least $min_served served commands; the server's log:" >&2
  tail -20 "$work/serve.log" >&2
  exit 1
fi
exit "$rc"
