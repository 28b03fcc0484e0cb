# What zsh's completion offers for a command line, one candidate a line.
# Usage: zsh -f zsh-capture.zsh FPATH_DIR 'command line'
# An interactive zsh runs in a pseudo-terminal (zpty) with compinit and the
# completion function under FPATH_DIR; the line is typed with a TAB after it,
# and a compadd wrapper prints each candidate it is given instead of drawing a
# menu. (After Valodim/zsh-capture-completion, MIT.) Candidates that zsh would
# drop later (a tag tried and left) may show up too: assert what is there
# and what is not, not the exact list.
zmodload zsh/zpty
zpty z zsh -f -i
local line
zpty -w z "PROMPT=; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; bindkey '^I' complete-word; zstyle ':completion:*' insert-tab false"
zpty -w z 'null-line () { echo -E - $'"'"'\0'"'"' }; compprefuncs=( null-line ); comppostfuncs=( null-line exit )'
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; local -A apre; zparseopts -E P:=apre; local h; for h in $__hits; do echo -E - "HIT:$IPREFIX${apre[-P]}$h"; done }'
zpty -w z 'echo ok''ay'
repeat 20; do zpty -r z line; [[ $line == okay* ]] && break; done
zpty -w z "$2"$'\t'
integer tog=0
while zpty -r z line; do
  if [[ $line == *$'\0'* ]]; then (( tog++ )) && break || continue; fi
  [[ $line == HIT:* ]] && print -r -- ${${line#HIT:}%$'\r'}
done
zpty -d z
