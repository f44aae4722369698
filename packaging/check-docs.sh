#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest `docs_match_help`: the man page and the completions describe the binary they ship with.
#   packaging/check-docs.sh CUCONV_BIN MAN_PAGE BASH_COMPLETION ZSH_COMPLETION ERROR_HPP
# - every option of `cuconv --help` (long and short) is in the man page, and its sections are there;
# - every --border value has an entry under BORDER MODES, every ExitCode of ERROR_HPP one under
#   EXIT STATUS (those two sections are written by hand in packaging/cuconv.h2m);
# - the bash completion, run as bash runs it, offers every option, every --variant/--border
#   value, the presets and parametric filters for --filter, files for the positionals, `serve`
#   as the first word and serve's options after it;
# - the zsh completion, run by an interactive zsh (when zsh is installed; else read as text),
#   offers the same.
# The option list is read here with its own pattern, not with the generator's parser.
set -euo pipefail
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
bin="$(absolute "$1")" man_page="$(absolute "$2")" bash_comp="$(absolute "$3")"
zsh_comp="$(absolute "$4")" error_hpp="$(absolute "$5")"

failures=0
fail() { echo "check-docs: $*" >&2; failures=$((failures + 1)); }
for f in "$man_page" "$bash_comp" "$zsh_comp"; do
  [[ -s "$f" ]] || { echo "check-docs: $f is missing (help2man not installed? run scripts/install-deps.sh)" >&2; exit 1; }
done

help="$("$bin" --help)"
# An option's line starts with two blanks and its names ("  -f, --filter SPEC   text").
option_names() { grep -E '^  -' | sed -E 's/^  //; s/(,) /\1/; s/ .*//' | tr ',' '\n' | grep -E '^--?[A-Za-z]' | sort -u; }
mapfile -t options < <(option_names <<<"$help")
(( ${#options[@]} >= 10 )) || fail "only ${#options[@]} options found in --help: ${options[*]}"
# The values of an option: the rows of its table below the options ("Border modes (--border):").
choices_of() { awk -v want="($1):" '$NF == want { on = 1; next } /^$/ { on = 0 } on && /^  [^ ]/ { print $1 }' <<<"$help"; }
mapfile -t serve_options < <("$bin" serve --help | option_names)
(( ${#serve_options[@]} >= 5 )) || fail "only ${#serve_options[@]} options found in serve --help: ${serve_options[*]}"
borders="$(choices_of --border)"
[[ -n "$borders" && -n "$(choices_of --variant)" ]] || fail "--help lists no values for --border or --variant"

# ---- man page: roff with \- and font escapes removed ----------------------------------------
man_text="$(sed -E 's/\\-/-/g; s/\\f[BIRP]//g; s/\\\(mu/x/g' "$man_page")"
for opt in "${options[@]}"; do
  grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|$)" <<<"$man_text" || fail "man page lacks option $opt"
done
for section in SYNOPSIS DESCRIPTION OPTIONS "FILTER FORMATS" "BUILT-IN FILTERS" "BORDER MODES" "EXIT STATUS" EXAMPLES; do
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

# ---- completions, run as the shells run them ---------------------------------------------------
scratch="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-docs.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
touch "$scratch/picture-one.png"
gauss_presets="$("$bin" --list-filters | awk '$1 ~ /^gauss[0-9]/ { print $1 }')"
[[ -n "$gauss_presets" ]] || fail "--list-filters lists no gauss presets"

# check_completion SHELL OFFERS: OFFERS WORD... prints, one per line, what SHELL's completion
# offers for `cuconv WORD...` (the last word is the one being completed).
check_completion() {
  local shell="$1" offers="$2" offered opt v p
  offered="$("$offers" -)"
  for opt in "${options[@]}"; do
    grep -qx -- "$opt" <<<"$offered" || fail "$shell completion does not offer $opt"
  done
  for opt in --border --variant; do
    offered="$("$offers" "$opt" "")"
    for v in $(choices_of "$opt"); do
      grep -qx -- "$v" <<<"$offered" || fail "$shell completion of $opt lacks '$v'"
    done
  done
  offered="$("$offers" --filter gauss)"
  for p in $gauss_presets; do
    grep -qx "$p" <<<"$offered" || fail "$shell completion of '--filter gauss' lacks preset $p"
  done
  grep -qx "picture-one.png" <<<"$("$offers" pic)" || fail "$shell completion does not complete file names"
  grep -qx "picture-one.png" <<<"$("$offers" --filter pic)" || fail "$shell completion of --filter does not complete files"
  grep -qx "serve" <<<"$("$offers" se)" || fail "$shell completion does not offer serve as the first word"
  grep -qx "gaussian:" <<<"$("$offers" --filter gau)" || fail "$shell completion of '--filter gau' lacks gaussian:"
  offered="$("$offers" serve -)"
  for opt in "${serve_options[@]}"; do
    grep -qx -- "$opt" <<<"$offered" || fail "$shell completion of 'cuconv serve' does not offer $opt"
  done
}

bash_offers() {
  (cd "$scratch" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _cuconv; printf "%s\n" "${COMPREPLY[@]}"' \
     _ "$bash_comp" cuconv "$@")
}
check_completion bash bash_offers

if command -v zsh >/dev/null 2>&1; then
  zsh -n "$zsh_comp" || fail "zsh completion does not parse"
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  zsh_dir="$(cd "$(dirname "$zsh_comp")" && pwd)"
  zsh_offers() { (cd "$scratch" && timeout 60 zsh -f "$here/zsh-matches.zsh" "$zsh_dir" "cuconv $*"); }
  check_completion zsh zsh_offers
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
