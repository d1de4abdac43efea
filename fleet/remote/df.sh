#!/usr/bin/env bash
# fleet/remote/df.sh (fleet/facts/system.py df_command): df of each directory given as an argument, or of its
# nearest existing ancestor (the venv may not exist yet).
for d in "$@"; do
  # bash alone walks up to the ancestor and drops df's header: one process per directory, not three
  p=$d; while [ ! -e "$p" ] && [ "$p" != / ]; do case $p in */*) p=${p%/*}; p=${p:-/};; *) p=/;; esac; done
  printf 'dir %s\n' "$d"
  out=$(df -Pk -- "$p"); [[ $out == *$'\n'* ]] && printf '%s\n' "${out#*$'\n'}"
done
