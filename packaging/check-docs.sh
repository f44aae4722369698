#!/usr/bin/env bash
# CTest `docs_match_help`: the man page and the completions describe the binary they ship with.
#   packaging/check-docs.sh CUCONV_BIN MAN_PAGE BASH_COMPLETION ZSH_COMPLETION ERROR_HPP
# - every option of `cuconv --help` (long and short) is in the man page, and its sections are there;
# - every --border value has an entry under BORDER MODES, every ExitCode of ERROR_HPP one under
#   EXIT STATUS (those two sections are written by hand in packaging/cuconv.h2m);
# - the bash completion, run as bash runs it, offers every option, every --variant/--border
#   value, the presets for --filter and files for the positionals;
# - the zsh completion, run by an interactive zsh (when zsh is installed; else read as text),
#   offers the same.
# The option list is read here with its own pattern, not with the generator's parser.
set -euo pipefail
bin="$1" man_page="$2" bash_comp="$3" zsh_comp="$4" error_hpp="$5"

failures=0
fail() { echo "check-docs: $*" >&2; failures=$((failures + 1)); }
for f in "$man_page" "$bash_comp" "$zsh_comp"; do
  [[ -s "$f" ]] || { echo "check-docs: $f is missing (help2man not installed? run scripts/install-deps.sh)" >&2; exit 1; }
done

help="$("$bin" --help)"
mapfile -t options < <(grep -E '^ +-' <<<"$help" | sed -E 's/^ +//; s/ .*//' | tr ',' '\n' | grep -E '^--?[A-Za-z]' | sort -u)
(( ${#options[@]} >= 10 )) || fail "only ${#options[@]} options found in --help: ${options[*]}"
choices_of() { grep -E -- "^ +(-[a-z],)?$1 " <<<"$help" | grep -oE '\{[^}]*\}' | tr -d '{}' | tr ',' ' '; }
borders="$(choices_of --border)"
variants="$(choices_of --variant)"
[[ -n "$borders" && -n "$variants" ]] || fail "--help lists no values for --border or --variant"

# ---- man page: roff with \- and font escapes removed ----------------------------------------
man_text="$(sed -E 's/\\-/-/g; s/\\f[BIRP]//g; s/\\\(mu/x/g' "$man_page")"
for opt in "${options[@]}"; do
  grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|$)" <<<"$man_text" || fail "man page lacks option $opt"
done
for section in SYNOPSIS DESCRIPTION OPTIONS "FILTER FORMATS" "BORDER MODES" "EXIT STATUS" EXAMPLES; do
  grep -qE "^\.SH \"?$section\"?$" <<<"$man_text" || fail "man page lacks section $section"
done
section_of() { awk -v want="$1" '/^\.SH/ { inside = (index($0, want) > 0); next } inside' <<<"$man_text"; }
border_section="$(section_of "BORDER MODES")"
for b in $borders; do
  grep -qx "\.B $b" <<<"$border_section" || fail "man page BORDER MODES has no entry for '$b'"
done
exit_section="$(section_of "EXIT STATUS")"
codes="$(sed -n '/enum class ExitCode/,/};/p' "$error_hpp" | grep -oE '= *[0-9]+' | tr -dc '0-9\n')"
[[ -n "$codes" ]] || fail "no ExitCode values found in $error_hpp"
for c in $codes; do
  grep -qE "^\.B $c(,|$)" <<<"$exit_section" || fail "man page EXIT STATUS has no entry for exit code $c"
done

# ---- bash completion, called as bash calls it ------------------------------------------------
scratch="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-docs.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
touch "$scratch/picture-one.png"
complete_words() {  # complete_words WORD... : COMPREPLY for the last word, one per line
  (cd "$scratch" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _cuconv; printf "%s\n" "${COMPREPLY[@]}"' \
     _ "$bash_comp" cuconv "$@")
}
offered="$(complete_words -)"
for opt in "${options[@]}"; do
  grep -qx -- "$opt" <<<"$offered" || fail "bash completion does not offer $opt"
done
for pair in "--border:$borders" "--variant:$variants"; do
  offered="$(complete_words "${pair%%:*}" "")"
  for v in ${pair#*:}; do
    grep -qx -- "$v" <<<"$offered" || fail "bash completion of ${pair%%:*} lacks '$v'"
  done
done
offered="$(complete_words --filter gauss)"
for p in $("$bin" --list-filters | awk '$1 ~ /^gauss[0-9]/ { print $1 }'); do
  grep -qx "$p" <<<"$offered" || fail "bash completion of '--filter gauss' lacks preset $p"
done
[[ "$(complete_words --filter gauss)" != "" ]] || fail "bash completion of '--filter gauss' is empty"
grep -qx "picture-one.png" <<<"$(complete_words pic)" || fail "bash completion does not complete file names"
grep -qx "picture-one.png" <<<"$(complete_words --filter pic)" || fail "bash completion of --filter does not complete files"

# ---- zsh completion, run by an interactive zsh (when zsh is installed) ---------------------
if command -v zsh >/dev/null 2>&1; then
  zsh -n "$zsh_comp" || fail "zsh completion does not parse"
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  zsh_dir="$(cd "$(dirname "$zsh_comp")" && pwd)"
  zsh_offers() { (cd "$scratch" && timeout 60 zsh -f "$here/zsh-matches.zsh" "$zsh_dir" "cuconv $*"); }
  offered="$(zsh_offers -)"
  for opt in "${options[@]}"; do
    grep -qx -- "$opt" <<<"$offered" || fail "zsh completion does not offer $opt"
  done
  for pair in "--border:$borders" "--variant:$variants"; do
    offered="$(zsh_offers "${pair%%:*} ")"
    for v in ${pair#*:}; do
      grep -qx -- "$v" <<<"$offered" || fail "zsh completion of ${pair%%:*} lacks '$v'"
    done
  done
  offered="$(zsh_offers --filter gauss)"
  for p in $("$bin" --list-filters | awk '$1 ~ /^gauss[0-9]/ { print $1 }'); do
    grep -qx "$p" <<<"$offered" || fail "zsh completion of '--filter gauss' lacks preset $p"
  done
  grep -qx "picture-one.png" <<<"$(zsh_offers pic)" || fail "zsh completion does not complete file names"
else
  echo "check-docs: zsh is not installed: the zsh completion is checked as text only"
  for opt in "${options[@]}"; do
    [[ "$opt" == --* ]] || continue
    grep -qF -- "$opt" "$zsh_comp" || fail "zsh completion lacks $opt"
  done
fi

if (( failures > 0 )); then
  echo "check-docs: $failures problem(s)" >&2
  exit 1
fi
echo "check-docs: man page and completions match --help (${#options[@]} options)"
