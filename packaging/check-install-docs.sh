#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest `install_docs`: what the .deb holds (the Runtime component, installed into a scratch
# prefix) has the licence where Debian keeps it, the guides the man page points to, and a
# machine-readable copyright file that names the parts built into the binary.
#   packaging/check-install-docs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1" source="$2"
prefix="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-install-docs.XXXXXX")"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --component Runtime --prefix "$prefix" >/dev/null

failures=0
fail() { echo "install-docs: $*" >&2; failures=$((failures + 1)); }
doc="$prefix/share/doc/cuconv"
copyright="$doc/copyright"
[[ -s "$copyright" ]] || fail "share/doc/cuconv/copyright is missing"
[[ -s "$doc/README.md" ]] || fail "share/doc/cuconv/README.md is missing"
# Every page of docs/ the man page's SEE ALSO names, and every docs/*.md of the source.
man_see_also="$(sed -n '/^\[SEE ALSO\]/,$p' "$source/packaging/cuconv.h2m")"
for page in $(sed 's/\\//g' <<<"$man_see_also" | grep -oE '[a-z-]+\.md' | sort -u); do
  [[ "$page" == README.md ]] && continue
  [[ -s "$doc/docs/$page" ]] || fail "the man page names $page, which share/doc/cuconv/docs lacks"
done
for page in "$source"/docs/*.md; do
  [[ -s "$doc/docs/$(basename "$page")" ]] || fail "docs/$(basename "$page") is not installed"
done

# The copyright file: DEP-5's header, and a License paragraph for every licence a Files paragraph names.
if [[ -s "$copyright" ]]; then
  head -n1 "$copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "copyright: the first line is not DEP-5's Format line"
  grep -q '^Files: \*$' "$copyright" || fail "copyright: no 'Files: *' paragraph"
  # Licences named in Files paragraphs without their text, and the standalone License paragraphs.
  named="$(awk '/^Files:/ { files = 1 } /^$/ { files = 0 }
                pending != "" { if ($0 !~ /^ /) print pending; pending = "" }
                files && /^License:/ { pending = $2 }
                END { if (pending != "") print pending }' "$copyright" | sort -u)"
  standalone="$(awk 'previous == "" && /^License:/ { print $2 } { previous = $0 }' "$copyright" | sort -u)"
  for licence in $named; do
    grep -qx "$licence" <<<"$standalone" || fail "copyright: no License paragraph for $licence"
  done
  [[ -n "$standalone" ]] || fail "copyright: no standalone License paragraph"
  for part in CLI11 "JSON for Modern C++" "CUDA runtime" nvJPEG; do
    grep -q "$part" "$copyright" || fail "copyright does not name $part"
  done
  cmp -s <(sed -n '1,/TERMS AND CONDITIONS/p' "$source/LICENSE") \
         <(sed -n '1,/TERMS AND CONDITIONS/p' /usr/share/common-licenses/Apache-2.0 2>/dev/null || true) ||
    [[ ! -f /usr/share/common-licenses/Apache-2.0 ]] || fail "LICENSE is not the Apache License 2.0 text"
fi
(( failures == 0 )) || exit 1
echo "install-docs: copyright, README.md and $(ls "$doc/docs" | wc -l) guides installed"
