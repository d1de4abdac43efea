#!/usr/bin/env bash
# fleet/remote/pip_fast.sh (fleet/resources/pip.py): fleet_pip_fast VENV REQ...
# The check's fast path, in bash builtins alone (a Python start with importlib.metadata costs ~0.1 s of CPU, most of
# a no-op probe's share on a small host): each pin's one NAME-*.dist-info in the venv's site-packages, matched as
# importlib.metadata matches it (lowercased, the name before the first '-', runs of -_. as one '_'), its METADATA
# Version compared as _CHECK_PY compares it. It only ever answers "in state": anything it cannot vouch for
# (PYTHONPATH set, several site-packages or matches, an .egg-info, a match in the working directory, which is
# sys.path[0] for `python -c`, a version that differs, a distribution whose package is gone from beside its dist-info:
# its top_level.txt's names, else its own name, neither a directory nor a .py there, as `rm -rf .../torch` leaves it)
# returns 1 and _CHECK_PY answers as before (pip_check.py: "its files are gone").
fleet_pip_norm() { fleet_n=${1,,}; fleet_n=${fleet_n//[-.]/_}; while [[ $fleet_n == *__* ]]; do fleet_n=${fleet_n//__/_}; done; }
fleet_pip_fast() {
  [ -z "${PYTHONPATH:-}" ] || return 1
  local req name want key e low hit n line have
  local -a sites entries
  shopt -s nullglob
  sites=("$1"/lib/python3*/site-packages); shift
  [ "${#sites[@]}" -eq 1 ] || return 1
  entries=("${sites[0]}"/* "$PWD"/*.[dDeE][iIgG][sSgG]*)
  for req in "$@"; do
    name=${req%%==*}; want=; [ "$name" = "$req" ] || want=${req#*==}
    fleet_pip_norm "$name"; key=$fleet_n; hit=; n=0
    for e in "${entries[@]}"; do
      low=${e##*/}; low=${low,,}
      case $low in *.dist-info|*.egg-info) ;; *) continue;; esac
      low=${low%.*}; fleet_pip_norm "${low%%-*}"
      [ "$fleet_n" = "$key" ] || continue
      n=$((n + 1)); hit=$e
    done
    [ "$n" -eq 1 ] && [ "${hit%/*}" = "${sites[0]}" ] && [[ ${hit,,} == *.dist-info ]] && [ -r "$hit/METADATA" ] || return 1
    have=
    while IFS= read -r line; do
      line=${line%$'\r'}
      case $line in '') break;; [Vv]ersion:*) have=${line#*:}; have=${have# }; break;; esac
    done < "$hit/METADATA"
    [ -n "$have" ] || return 1
    if [ -r "$hit/top_level.txt" ]; then
      while IFS= read -r line; do
        line=${line%$'\r'}
        [ -z "$line" ] || [ -d "${sites[0]}/$line" ] || [ -e "${sites[0]}/$line.py" ] || return 1
      done < "$hit/top_level.txt"
    else [ -d "${sites[0]}/$key" ] || [ -e "${sites[0]}/$key.py" ] || return 1; fi
    [ -z "$want" ] || [ "$have" = "$want" ] || { [[ $want != *+* ]] && [ "${have%%+*}" = "$want" ]; } || return 1
  done
}
