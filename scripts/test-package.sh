#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI check of the Debian package: its contents and Depends, then `apt-get install ./cuconv_*.deb`
# on this machine and the installed tool used as a user would: `cuconv --version`, a filter from
# /usr/bin, `man cuconv`, the bash completion; then an upgrade while a server runs (the next call
# runs the new engine, the old server exits).
#   scripts/test-package.sh [DEB]     (default: the one in dist/, made by scripts/package.sh)
# Leaves the package under test installed (CI's machine is thrown away; `apt-get remove cuconv` undoes it).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deb="${1:-}"
if [[ -z "$deb" ]]; then
  mapfile -t debs < <(ls "$repo_root"/dist/cuconv_*_amd64.deb 2>/dev/null)
  (( ${#debs[@]} == 1 )) || { echo "test-package: expected one dist/cuconv_*_amd64.deb, found ${#debs[@]} (run scripts/package.sh)" >&2; exit 1; }
  deb="${debs[0]}"
fi
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
sudo_cmd=()
(( EUID == 0 )) || sudo_cmd=(sudo)

failures=0
fail() { echo "test-package: $*" >&2; failures=$((failures + 1)); }

# ---- what the package holds ------------------------------------------------------------------
version="$(dpkg-deb -f "$deb" Version)"
[[ "$(basename "$deb")" == "cuconv_${version}_amd64.deb" ]] || fail "file name $(basename "$deb") is not cuconv_${version}_amd64.deb"
contents="$(dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|')"
for f in /usr/bin/cuconv /usr/libexec/cuconv/cuconv-engine /usr/share/man/man1/cuconv.1.gz /usr/share/bash-completion/completions/cuconv \
         /usr/share/zsh/vendor-completions/_cuconv /usr/share/cuconv/filters/gauss5.mat \
         /usr/lib/systemd/user/cuconv.socket /usr/lib/systemd/user/cuconv.service; do
  grep -qx -- "$f" <<<"$contents" || fail "package lacks $f"
done
presets_in_repo="$(cd "$repo_root/filters" && ls ./*.mat | wc -l)"
presets_in_deb="$(grep -c '^/usr/share/cuconv/filters/.*\.mat$' <<<"$contents" || true)"
(( presets_in_deb == presets_in_repo )) || fail "package holds $presets_in_deb presets, filters/ has $presets_in_repo"
# /usr/lib/systemd/user holds `cuconv serve`'s user units, not development files.
if grep -vE '^/usr/lib/(systemd/user/.*)?$|^/usr/lib/systemd/?$' <<<"$contents" | grep -qE '^/usr/(include|lib)/'; then
  fail "package holds development files"
fi

depends="$(dpkg-deb -f "$deb" Depends)"
echo "test-package: Depends: $depends"
for pkg in libopencv-core libopencv-imgproc libopencv-imgcodecs; do
  grep -q "$pkg" <<<"$depends" || fail "Depends lacks $pkg"
done

# ---- install it --------------------------------------------------------------------------------
# --allow-downgrades: a machine that ran this script before holds its repacked +upgrade1 version
# (CI failed on such a machine with "Packages were downgraded and -y was used").
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --allow-downgrades "$deb" >/dev/null
[[ "$(dpkg-query -W -f='${Version}' cuconv)" == "$version" ]] || fail "cuconv $version did not install (dpkg has $(dpkg-query -W -f='${Version}' cuconv))"
[[ "$(command -v cuconv)" == /usr/bin/cuconv ]] || fail "cuconv on PATH is '$(command -v cuconv || true)', not /usr/bin/cuconv"

# Every library the installed engine and its codec module load comes from a package in Depends, by
# name or by what it Provides (libspdlog1.10 provides libspdlog1.10-fmt9): dpkg-shlibdeps's work
# checked from the other side. No CUDA library: cudart is linked statically. The front end
# /usr/bin/cuconv loads nothing beyond libc's family, so a served call loads no OpenCV and no CUDA;
# the engine loads no imgcodecs until the module does.
engine=/usr/libexec/cuconv/cuconv-engine
module=/usr/libexec/cuconv/libcuconv-opencv-codecs.so
checked_libs=0
depend_names="$(tr ',|' '\n\n' <<<"$depends" | sed -E 's/\(.*\)//; s/:.*//; s/^ +//; s/ +$//')"
if objdump -p "$engine" | awk '$1 == "NEEDED" { print $2 }' | grep -q imgcodecs; then
  fail "$engine links imgcodecs itself (it is the module's)"
fi
for object in "$engine" "$module"; do
while read -r path; do
  owner="$(dpkg-query -S "$path" 2>/dev/null || dpkg-query -S "/usr$path" 2>/dev/null || true)"
  owner="${owner%%:*}"
  checked_libs=$((checked_libs + 1))
  if [[ -z "$owner" ]]; then
    fail "$object needs $path, which no package owns"
    continue
  fi
  provides="$(dpkg-query -W -f='${Provides}' "$owner" | tr ',' '\n' | sed -E 's/\(.*\)//; s/^ +//; s/ +$//')"
  if ! grep -qxF -f <(printf '%s\n' "$owner" $provides) <<<"$depend_names"; then
    fail "$object needs $path from $owner, which is not in Depends"
  fi
done < <(objdump -p "$object" | awk '$1 == "NEEDED" { print $2 }' |
         while read -r soname; do ldd "$object" | awk -v s="$soname" '$1 == s { print $3 }'; done)
done
(( checked_libs >= 8 )) || fail "only $checked_libs libraries of $engine and $module checked against Depends"
if ldd "$engine" | grep -q 'libcudart'; then fail "$engine links libcudart dynamically"; fi
front_libs="$(objdump -p /usr/bin/cuconv | awk '$1 == "NEEDED" { print $2 }' | grep -vE '^(libc|libm|ld-linux[^ ]*)\.so' || true)"
[[ -z "$front_libs" ]] || fail "/usr/bin/cuconv (the front end) loads more than libc: $front_libs"

# ---- use it ------------------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-package.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$work" && cuconv --version)
(cd "$work" && cuconv "$repo_root/samples/coffee.png" coffee_gauss5.png --filter gauss5)
[[ -s "$work/coffee_gauss5.png" ]] || fail "cuconv from /usr/bin wrote no output"
(cd "$work" && cuconv "$repo_root/samples/camera.png" camera_sharpen.png --filter /usr/share/cuconv/filters/sharpen.mat -q)
[[ -s "$work/camera_sharpen.png" ]] || fail "cuconv did not filter with an installed preset file"
# The README's per-file script finds cuconv on PATH (it failed with "cuconv executable 'cuconv'
# not found" before the package existed, issue 24).
"$repo_root/samples/batch-example.sh" "$repo_root/samples" "$work/batch" >"$work/batch.log" 2>&1 ||
  { cat "$work/batch.log" >&2; fail "samples/batch-example.sh failed with the installed cuconv"; }
if command -v man >/dev/null 2>&1; then
  [[ "$(man -w cuconv)" == /usr/share/man/man1/cuconv.1.gz ]] || fail "man -w cuconv: $(man -w cuconv 2>&1)"
  MANWIDTH=100 man cuconv 2>/dev/null | grep -q 'EXIT STATUS' || fail "man cuconv shows no EXIT STATUS section"
else
  echo "test-package: man is not installed; man page checked as a file only"
fi
offered="$(bash -c 'source /usr/share/bash-completion/completions/cuconv; COMP_WORDS=(cuconv --border ""); COMP_CWORD=2; _cuconv; echo "${COMPREPLY[*]}"')"
[[ "$offered" == *reflect101* ]] || fail "installed bash completion offers '$offered' for --border"

# ---- an upgrade while a server runs -----------------------------------------------------------
# A server started from the installed package, then the package installed again as a new version
# (the same files repacked: dpkg puts a new engine file in place, as any upgrade does). The server
# sees its executable replaced and exits once idle; a call in between is refused by it (another
# build) and runs in its own process. Either way the next call runs the new engine.
export CUCONV_SOCKET="$work/serve/socket"
mkdir -m 700 "$work/serve"
(cd "$work" && exec cuconv serve --idle-exit 0 >"$work/serve.log" 2>&1) &
old_server=$!
for _ in $(seq 100); do [[ -S "$CUCONV_SOCKET" ]] && break; sleep 0.1; done
(cd "$work" && cuconv --server always --version >/dev/null) || fail "the installed server did not serve --server always"
cuconv serve --status | grep -q '^requests served: 1$' || fail "cuconv serve --status does not count the served call"
dpkg-deb -R "$deb" "$work/repack"
sed -i "s/^Version: .*/Version: ${version}+upgrade1/" "$work/repack/DEBIAN/control"
dpkg-deb --root-owner-group -b "$work/repack" "$work/cuconv_${version}+upgrade1_amd64.deb" >/dev/null
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$work/cuconv_${version}+upgrade1_amd64.deb" >/dev/null
[[ "$(dpkg-query -W -f='${Version}' cuconv)" == "${version}+upgrade1" ]] || fail "the repacked package did not install"
(cd "$work" && cuconv --server auto --version >/dev/null) || fail "cuconv --version failed after the upgrade"
if ! timeout 10 tail --pid="$old_server" -f /dev/null; then
  fail "the old server (pid $old_server) still runs 10 s after the upgrade"
  kill "$old_server" 2>/dev/null || true
fi
grep -q 'was replaced' "$work/serve.log" || fail "the old server's log does not say its executable was replaced: $(cat "$work/serve.log")"
if cuconv serve --status >/dev/null; then fail "a server still answers on $CUCONV_SOCKET after the upgrade"; fi
(cd "$work" && cuconv --server always --version >/dev/null 2>&1) && fail "--server always was served with no server running"
unset CUCONV_SOCKET
# The package under test goes back in place of the repack, so the next run starts where a user's
# machine would.
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --allow-downgrades "$deb" >/dev/null
[[ "$(dpkg-query -W -f='${Version}' cuconv)" == "$version" ]] || fail "cuconv $version did not go back in place of the repack"

if (( failures > 0 )); then
  echo "test-package: $failures problem(s)" >&2
  exit 1
fi
echo "test-package: OK: $(basename "$deb") installed, /usr/bin/cuconv filters, man page and completion in place"
