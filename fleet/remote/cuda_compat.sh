#!/usr/bin/env bash
# fleet/remote/cuda_compat.sh (fleet/facts/cuda.py COMPAT): each cuda-compat directory and its files, the
# LD_LIBRARY_PATH entries, and what the ld cache lists under a compat directory.
seen=' '
for d in /usr/local/cuda-*/compat /usr/local/cuda/compat; do
  [ -d "$d" ] || continue
  r=$(readlink -f -- "$d")
  case "$seen" in *" $r "*) continue;; esac
  seen="$seen$r "
  printf 'compat %s\n' "$r"
  # its files as `ls -1` names them (LC_ALL=C: the glob sorts as ls does; no dot files), with no process
  for f in "$r"/*; do [ -e "$f" ] || [ -L "$f" ] && printf 'file %s\n' "${f##*/}"; done
done
set -f; IFS=:
for e in ${LD_LIBRARY_PATH-}; do
  [ -n "$e" ] && printf 'ld_library_path %s\n' "$(readlink -f -- "$e" 2>/dev/null || printf '%s' "$e")"
done
# (hash finds it on PATH as `command -v` would, without the subshell $(...) costs; one sed, not grep then sed)
LDC=ldconfig; hash ldconfig 2>/dev/null || LDC=/sbin/ldconfig
"$LDC" -p 2>/dev/null | sed -n '/\/compat\//s/^[[:space:]]*/ldconfig /p'
true
