#!/usr/bin/env bash
# fleet/remote/fingerprint.sh: the host's parts of verify's fingerprint that the shells' trace does not give
# (fleet/facts/fingerprint.py fingerprint_script: select_python's $py and $env_dir come first, then this, then the
# trace is read into $fleet_shells_out, then fingerprint_trace.sh). Only file reads, no Python, no GPU: a probe runs
# on every host at every apply, and each process it starts costs ~1-2 ms of the host's CPU, so bash builtins
# wherever they give the same text (read, [[ ]], ${x:0:16}, one glob).
# py and env_dir: set by select_python (fleet/facts/software.py), which comes first; fleet_p3, fleet_p5, fleet_r_ni and
# fleet_r_bare are printed by fingerprint_trace.sh, which follows
# shellcheck disable=SC2154,SC2034
fleet_stat() { [ -e "$1" ] && stat -L -c '%n %s %Y' -- "$1" 2>/dev/null || echo "absent $1"; }
declare -A fleet_seen
fleet_libcuda() {  # fleet_r: the libcuda.so.1 the loader takes for this LD_LIBRARY_PATH (the path first, then the
  # ld cache, read once), as `path size mtime`; each file is resolved and stat'ed once for all three shells
  local fleet_d fleet_c='' IFS=:
  for fleet_d in $1; do
    if [ -n "$fleet_d" ] && [ -e "$fleet_d/libcuda.so.1" ]; then fleet_c=$fleet_d/libcuda.so.1; break; fi
  done
  IFS=$' \t\n'
  if [ -z "$fleet_c" ]; then
    # (hash finds ldconfig on PATH as `command -v` would, without the subshell $(...) costs)
    local fleet_ldc=ldconfig; hash ldconfig 2>/dev/null || fleet_ldc=/sbin/ldconfig
    [ -n "${fleet_cached+x}" ] || fleet_cached=$("$fleet_ldc" -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
    [ -n "$fleet_cached" ] || { fleet_r=none; return; }
    fleet_c=$fleet_cached
  fi
  [ -n "${fleet_seen[$fleet_c]+x}" ] || fleet_seen[$fleet_c]=$(fleet_stat "$(readlink -f "$fleet_c")")
  fleet_r=${fleet_seen[$fleet_c]}
}
fleet_first_line() {  # what `head -n 1 FILE` prints, else "none"
  [ -r "$1" ] || { echo none; return; }
  local line=; IFS= read -r line < "$1"; printf '%s\n' "$line"
}
# what the trace does not give, first
fleet_p1="driver $(fleet_first_line /proc/driver/nvidia/version)"
fleet_p1+=$'\n'"python $(fleet_stat "$(readlink -f "$py" 2>/dev/null)")"
fleet_recs=$(shopt -s nullglob; printf '%s\n' "$env_dir"/lib/python3*/site-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/dist-packages/torch-*.dist-info/RECORD /usr/lib/python3/dist-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/site-packages/torch-*.dist-info/RECORD)
# several: ls's order picks, as it always did (the glob's paths, one a line, split on IFS's newline)
# shellcheck disable=SC2012,SC2086
case $fleet_recs in
  *$'\n'*) fleet_rec=$(ls -d $fleet_recs 2>/dev/null | head -n 1) ;;
  *) fleet_rec=$fleet_recs ;;
esac
fleet_h=; [ -n "$fleet_rec" ] && fleet_h=$(sha256sum < "$fleet_rec")
fleet_p1+=$'\n'"torch ${fleet_rec:-none} ${fleet_h:0:16}"
# its files removed (rm -rf .../torch) with its RECORD left: the import fails, so what verify proved no longer holds
[ -z "$fleet_rec" ] || [ -e "${fleet_rec%/torch-*.dist-info/RECORD}/torch/__init__.py" ] || fleet_p1+=" files-gone"
fleet_h=$(cat /etc/fleet/env.sh /etc/profile.d/fleet.sh 2>/dev/null | sha256sum)
fleet_p1+=$'\n'"hook ${fleet_h:0:16}"
fleet_ni=${LD_LIBRARY_PATH:-}
fleet_libcuda "$fleet_ni"; fleet_r_ni=$fleet_r
fleet_libcuda ""; fleet_r_bare=$fleet_r
fleet_h=$(shopt -s nullglob; cat /etc/ld.so.preload /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null | sha256sum)
fleet_p3="ld.files ${fleet_h:0:16}"
# what torch loads beside itself: every distribution in its site-packages and the nvidia/* libraries there
if [ -n "$fleet_rec" ]; then
  fleet_site=${fleet_rec%/torch-*.dist-info/RECORD}
  fleet_h=$(shopt -s nullglob; cd "$fleet_site" 2>/dev/null && printf '%s\n' *.dist-info nvidia/* | sha256sum)
  fleet_p5="packages ${fleet_h:0:16}"
else fleet_p5="packages none"; fi
