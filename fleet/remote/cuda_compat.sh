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
  # shellcheck disable=SC2012  # a compat directory holds NVIDIA's libraries: plain names, one a line
  ls -1 -- "$r" | sed 's/^/file /'
done
set -f; IFS=:
for e in ${LD_LIBRARY_PATH-}; do
  [ -n "$e" ] && printf 'ld_library_path %s\n' "$(readlink -f -- "$e" 2>/dev/null || printf '%s' "$e")"
done
LDC=$(command -v ldconfig || echo /sbin/ldconfig)
"$LDC" -p 2>/dev/null | grep -F '/compat/' | sed 's/^[[:space:]]*/ldconfig /'
true
