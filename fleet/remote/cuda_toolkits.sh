#!/usr/bin/env bash
# fleet/remote/cuda_toolkits.sh (fleet/facts/cuda.py TOOLKITS): each CUDA toolkit under /usr/local and the nvcc on PATH.
# (cuda-compat alone creates /usr/local/cuda-X.Y/compat: that directory is not a toolkit)
for d in /usr/local/cuda /usr/local/cuda-*; do
  [ -e "$d" ] || continue
  if [ -L "$d" ]; then printf 'link %s -> %s\n' "$d" "$(readlink -f -- "$d")"; continue; fi
  [ -d "$d" ] || continue
  [ -e "$d/version.json" ] || [ -e "$d/bin/nvcc" ] || [ -e "$d/targets" ] || [ -e "$d/lib64" ] || continue
  printf 'toolkit %s\n' "$d"
  if [ -r "$d/version.json" ]; then
    # the first line with "version" among the "cuda": line and the three after it (grep -m1 -A3 | grep -m1), read
    # by bash: no process
    v='' n=-1 re='"cuda" *:'
    while IFS= read -r l || [ -n "$l" ]; do
      [ "$n" -ge 0 ] || { [[ $l =~ $re ]] && n=0; } || continue
      [[ $l == *'"version"'* ]] && { v=$l; break; }
      n=$((n + 1)); [ "$n" -le 3 ] || break
    done < "$d/version.json"
    printf 'version.json %s\n' "$v"
  fi
  if [ -x "$d/bin/nvcc" ]; then printf 'nvcc %s\n' "$d/bin/nvcc"; "$d/bin/nvcc" --version; fi
done
# (hash finds it on PATH as `command -v` would, without the subshell $(...) costs)
if hash nvcc 2>/dev/null && n=${BASH_CMDS[nvcc]}; then
  r=$(readlink -f -- "$n"); printf 'nvcc_on_path %s\n' "$r"
  case "$r" in /usr/local/cuda*) ;; *) printf 'path_toolkit %s\nnvcc %s\n' "${r%/bin/*}" "$r"; "$r" --version;; esac
fi
