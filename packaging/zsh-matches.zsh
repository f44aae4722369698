# SPDX-License-Identifier: Apache-2.0
# The matches zsh's completion offers for a command line, one per line, as a user would get them
# by pressing Tab (an interactive zsh in a pseudo-terminal; packaging/check-docs.sh uses it):
#   zsh -f packaging/zsh-matches.zsh FPATH_DIR "cuconv --border "
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1=''; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D"
# compadd replaced: every match is printed between << >> instead of being offered (no listing)
zpty -w z 'compadd () { builtin compadd -O __hits "$@"; print -l -- "<<${^__hits[@]}>>" >&2 }'
zpty -w z "exec 2>&1; print -- __REA''DY__"
zpty -r z out '*__READY__*'
zpty -w -n z "$2"$'\t'
# Read until the matches have stopped coming for 0.5 s (at most 15 s when none come).
out="" quiet=0
for (( i = 0; i < 150 && quiet < 5; i++ )); do
  sleep 0.1
  got=0
  while zpty -r -t z chunk; do out+=$chunk; got=1; done
  if (( got )); then quiet=0; elif [[ $out == *'<<'* ]]; then (( quiet++ )); fi
done
zpty -d z
print -r -- "$out" | grep -o '<<[^>]*>>' | tr -d '<>' | sort -u
