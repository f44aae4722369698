#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the bash and zsh completions of cuconv from the built binary's own output, so they follow
# every change of the command line: options and their values from `cuconv --help` and
# `cuconv serve --help`, preset names and parametric filters from `cuconv --list-filters`.
#   packaging/gen-completions.sh CUCONV_BIN OUT_DIR    -> OUT_DIR/cuconv.bash, OUT_DIR/_cuconv
# What an option's value completes to comes from its help line ("  -f, --filter SPEC   text"):
# a placeholder with '|' (auto|always|never): those words; one whose option has a table of its own
# below the options ("Border modes (--border):", its rows "  name  text"): the table's names;
# SPEC: presets, parametric filters and files; DIR: folders; FILE: files; anything else
# (N, BYTES, ...): nothing. The first word also completes to `serve`, whose options follow it.
set -euo pipefail
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
out_dir="$2"
mkdir -p "$out_dir"

# Presets: the first word of each --list-filters line that `cuconv --show-filter` accepts as a
# name (run in an empty folder, so that no file of that name can answer instead); headings fail.
# Parametric filters: the "name:" of each "  name:PARAMETERS" line of the Parametric section.
empty_dir="$(mktemp -d "${TMPDIR:-/tmp}/cuconv-completions.XXXXXX")"
trap 'rm -rf "$empty_dir"' EXIT
filters="$("$bin" --list-filters)"
presets=""
for word in $(awk '$1 !~ /:/ && $1 ~ /^[A-Za-z0-9_.-]+$/ { print $1 }' <<<"$filters"); do
  if (cd "$empty_dir" && "$bin" --show-filter "$word" >/dev/null 2>&1); then presets+="$word "; fi
done
presets="${presets% }"
parametric="$(awk '/^Parametric/ { on = 1; next } /^[^ ]/ { on = 0 } on && $1 ~ /^[a-z]+:/ { sub(/:.*/, ":", $1); printf "%s ", $1 }' <<<"$filters")"
parametric="${parametric% }"
[[ -n "$presets" ]] || { echo "gen-completions: no preset names in '$bin --list-filters'" >&2; exit 1; }
[[ -n "$parametric" ]] || { echo "gen-completions: no parametric filters in '$bin --list-filters'" >&2; exit 1; }

# One line per option of a help page: NAMES, KIND, CHOICES, DESCRIPTION separated by \037 (not
# whitespace, so an empty field stays a field for `read`), NAMES and CHOICES comma-separated.
# KIND: flag, choice, preset, dir, file, text.
read_options() {
  awk '
    /^  -/ {
      line = $0; sub(/^ +/, "", line)
      n = split(line, part, /  +/)
      gsub(/,/, " ", part[1])
      m = split(part[1], word, " ")
      names = ""; holder = ""
      for (i = 1; i <= m; i++) {
        if (word[i] ~ /^-/ && holder == "") names = names (names == "" ? "" : ",") word[i]
        else if (holder == "") holder = word[i]
      }
      count++; name[count] = names; placeholder[count] = holder; desc[count] = (n > 1) ? part[2] : ""
      last = count; next
    }
    last && desc[last] == "" && /^ +[^ -]/ { d = $0; sub(/^ +/, "", d); desc[last] = d; last = 0; next }
    { last = 0 }
    /^[A-Z].*\(--[a-z-]+\):$/ { match($0, /\(--[a-z-]+\)/); table = substr($0, RSTART + 1, RLENGTH - 2); next }
    /^$/ { table = "" }
    table != "" && /^  [^ -]/ { choices[table] = choices[table] (choices[table] == "" ? "" : ",") $1 }
    END {
      for (i = 1; i <= count; i++) {
        kind = "flag"; list = ""; h = placeholder[i]
        if (h != "") {
          kind = "text"
          split(name[i], forms, ","); long = forms[length(forms)]
          if (h ~ /\|/) { kind = "choice"; list = h; gsub(/\|/, ",", list) }
          else if (long in choices) { kind = "choice"; list = choices[long] }
          else if (h == "SPEC") kind = "preset"
          else if (h == "DIR") kind = "dir"
          else if (h == "FILE") kind = "file"
        }
        printf "%s\037%s\037%s\037%s\n", name[i], kind, list, desc[i]
      }
    }'
}
spec="$("$bin" --help | read_options)"
serve_spec="$("$bin" serve --help | read_options)"
for s in "$spec" "$serve_spec"; do
  if [[ "$(grep -c . <<<"$s")" -lt 5 ]] || ! grep -q -- '--help' <<<"$s"; then
    echo "gen-completions: could not read the options from '$bin [serve] --help' (has its format changed?)" >&2
    exit 1
  fi
done
grep -q -- '--filter' <<<"$spec" || { echo "gen-completions: no --filter in '$bin --help'" >&2; exit 1; }

# ---- bash ----------------------------------------------------------------------------------------
# bash_cases SPEC: the `case "$prev"` arms of a spec; bash_options SPEC: its option names.
bash_cases() {
  local names kind choices desc pattern
  while IFS=$'\037' read -r names kind choices desc; do
    pattern="${names//,/|}"
    case "$kind" in
      choice) printf '    %s) COMPREPLY=($(compgen -W %q -- "$cur")); return ;;\n' "$pattern" "${choices//,/ }" ;;
      preset) printf '    %s) _cuconv_filters; return ;;\n' "$pattern" ;;
      dir)    printf '    %s) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;\n' "$pattern" ;;
      file)   printf '    %s) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;\n' "$pattern" ;;
      text)   printf '    %s) return ;;\n' "$pattern" ;;
    esac
  done <<<"$1"
}
bash_options() { cut -d $'\037' -f1 <<<"$1" | tr ',\n' '  ' | sed 's/ *$//'; }

cat >"$out_dir/cuconv.bash" <<EOF2
# bash completion for cuconv. Generated by packaging/gen-completions.sh from \`cuconv --help\`,
# \`cuconv serve --help\` and \`cuconv --list-filters\`; do not edit.
_cuconv_filters() {
  local presets='$presets' parametric='$parametric'
  COMPREPLY=(\$(compgen -W "\$presets \$parametric" -- "\$cur") \$(compgen -f -- "\$cur"))
  # A parametric name ("gaussian:") is the start of a filter: no space after it.
  if (( \${#COMPREPLY[@]} == 1 )) && [[ "\${COMPREPLY[0]}" == *: ]]; then compopt -o nospace 2>/dev/null; fi
  compopt -o filenames 2>/dev/null
}
_cuconv() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev=""
  (( COMP_CWORD > 0 )) && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if (( COMP_CWORD > 1 )) && [[ "\${COMP_WORDS[1]}" == serve ]]; then
    case "\$prev" in
$(bash_cases "$serve_spec")
    esac
    COMPREPLY=(\$(compgen -W '$(bash_options "$serve_spec")' -- "\$cur"))
    return
  fi
  case "\$prev" in
$(bash_cases "$spec")
  esac
  if [[ "\$cur" == -* ]]; then
    COMPREPLY=(\$(compgen -W '$(bash_options "$spec")' -- "\$cur"))
    return
  fi
  COMPREPLY=(\$(compgen -f -- "\$cur"))
  (( COMP_CWORD == 1 )) && COMPREPLY+=(\$(compgen -W serve -- "\$cur"))
  compopt -o filenames 2>/dev/null
}
complete -F _cuconv cuconv
EOF2

# ---- zsh -----------------------------------------------------------------------------------------
# _arguments specs: '(exclusions)'{-x,--xx=}'[description]:message:action'. Characters that have
# a meaning there ([ ] : ' \) are dropped from descriptions.
zsh_specs() {
  local names kind choices desc d arg n forms name_list
  while IFS=$'\037' read -r names kind choices desc; do
    d="$(tr -d "[]:'\\\\\`" <<<"$desc")"
    IFS=',' read -r -a name_list <<<"$names"
    case "$kind" in
      flag)   arg="" ;;
      choice) arg=":${name_list[-1]#--}:(${choices//,/ })" ;;
      preset) arg=":filter:_cuconv_filters" ;;
      dir)    arg=":directory:_files -/" ;;
      file)   arg=":file:_files" ;;
      text)   arg=":value: " ;;
    esac
    forms=()
    for n in "${name_list[@]}"; do
      if [[ -z "$arg" ]]; then forms+=("$n")
      elif [[ "$n" == --* ]]; then forms+=("$n=")
      else forms+=("$n+")
      fi
    done
    if (( ${#forms[@]} > 1 )); then
      printf "    '(%s)'{%s}'[%s]%s' \\\\\n" "${name_list[*]}" "$(IFS=,; echo "${forms[*]}")" "$d" "$arg"
    else
      printf "    '%s[%s]%s' \\\\\n" "${forms[0]}" "$d" "$arg"
    fi
  done <<<"$1"
}

cat >"$out_dir/_cuconv" <<EOF2
#compdef cuconv
# zsh completion for cuconv. Generated by packaging/gen-completions.sh from \`cuconv --help\`,
# \`cuconv serve --help\` and \`cuconv --list-filters\`; do not edit.
_cuconv_filters() {
  _alternative 'presets:preset:($presets)' 'parametric:parametric filter:compadd -S "" -- $parametric' 'files:file:_files'
}
_cuconv_first() {
  _alternative 'commands:command:(serve)' 'files:file:_files'
}
if [[ \${words[2]} == serve ]] && (( CURRENT > 2 )); then
  _arguments -s \\
$(zsh_specs "$serve_spec")
    '*: :_nothing'
  return
fi
_arguments -s \\
$(zsh_specs "$spec")
  '1:input or serve:_cuconv_first' '*:file:_files'
EOF2
