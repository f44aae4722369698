#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest `completion_setup`: docs/install.md's lines that turn tab completion on work. A fresh
# `bash -i` with a HOME of its own gets the ~/.bashrc lines of install.md's "Turning tab
# completion on" (taken from the page itself), the built completion where bash-completion looks
# for a user's, and must then load it on demand and complete `cuconv --bor` to `--border`.
# Without the bash-completion package it exits 77 (Skipped), or 1 on CI (CI=true).
#   tests/scripts/completion_setup.sh BASH_COMPLETION_FILE INSTALL_MD
set -euo pipefail
completion="$1" install_md="$2"
if [[ ! -f /usr/share/bash-completion/bash_completion ]]; then
  echo "completion_setup: the bash-completion package is not installed (Debian: apt-get install bash-completion)"
  [[ "${CI:-}" == true ]] && { echo "completion_setup: CI must run this test (scripts/install-deps.sh)" >&2; exit 1; }
  exit 77
fi
home="$(mktemp -d "${TMPDIR:-/tmp}/completion_setup.XXXXXX")"
trap 'rm -rf "$home"' EXIT
mkdir -p "$home/.local/share/bash-completion/completions"
cp "$completion" "$home/.local/share/bash-completion/completions/cuconv"
# The lines between "cat >> ~/.bashrc <<'EOF'" and "EOF" in install.md.
awk '/^cat >> ~\/.bashrc <<.EOF.$/ { on = 1; next } on && /^EOF$/ { exit } on' "$install_md" >"$home/.bashrc"
[[ -s "$home/.bashrc" ]] || { echo "completion_setup: no ~/.bashrc lines found in $install_md" >&2; exit 1; }
offered="$(env -i HOME="$home" PATH=/usr/bin:/bin TERM=dumb bash -i -c \
  '_completion_loader cuconv; COMP_WORDS=(cuconv --bor); COMP_CWORD=1; _cuconv; printf "%s\n" "${COMPREPLY[@]}"' \
  2>/dev/null || true)"
if ! grep -qx -- --border <<<"$offered"; then
  echo "completion_setup: after install.md's lines, 'cuconv --bor' completes to '${offered//$'\n'/ }', not --border" >&2
  exit 1
fi
echo "completion_setup: install.md's ~/.bashrc lines load the cuconv completion in a fresh bash -i"
