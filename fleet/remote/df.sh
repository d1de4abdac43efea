#!/usr/bin/env bash
# fleet/remote/df.sh (fleet/facts/system.py df_command): df of each directory given as an argument, or of its
# nearest existing ancestor (the venv may not exist yet).
fleet_at=()
for d in "$@"; do
  # bash alone walks up to the ancestor
  p=$d; while [ ! -e "$p" ] && [ "$p" != / ]; do case $p in */*) p=${p%/*}; p=${p:-/};; *) p=/;; esac; done
  fleet_at+=("$p")
done
# one df for them all: -P prints one line per directory asked, in the order asked, after its header. Where it did
# not answer one line each (a directory it could not read), each directory is asked alone, its error said.
fleet_out=$(df -Pk -- "${fleet_at[@]}" 2>/dev/null)
set -f; IFS=$'\n'
# shellcheck disable=SC2206  # split on newlines alone, no glob: one element a line
fleet_l=($fleet_out)
unset IFS; set +f
if [ "${#fleet_l[@]}" = $(($# + 1)) ]; then
  i=1; for d in "$@"; do printf 'dir %s\n%s\n' "$d" "${fleet_l[i]}"; i=$((i + 1)); done
else
  i=0
  for d in "$@"; do
    printf 'dir %s\n' "$d"
    out=$(df -Pk -- "${fleet_at[i]}"); [[ $out == *$'\n'* ]] && printf '%s\n' "${out#*$'\n'}"
    i=$((i + 1))
  done
fi
