#!/usr/bin/env bash
# fleet/remote/script_version_ge.sh (fleet/workflows/script_runtime.py): fleet_ge A B: version A >= version B,
# compared number by number (570.26 < 570.133.20); fleet_refuse WHY: the script refuses, changing nothing.
# shellcheck disable=SC2206  # A and B split on IFS=. on purpose (versions hold no glob character)
fleet_ge() {
  local IFS=. i; local -a a=($1) b=($2)
  for ((i = 0; i < ${#a[@]} || i < ${#b[@]}; i++)); do
    ((10#${a[i]:-0} > 10#${b[i]:-0})) && return 0
    ((10#${a[i]:-0} < 10#${b[i]:-0})) && return 1
  done
  return 0
}
fleet_refuse() { printf 'REFUSED %s\n' "$1" >&2; printf 'changed=0\n'; exit 3; }
