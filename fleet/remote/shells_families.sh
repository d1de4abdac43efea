#!/usr/bin/env bash
# fleet/remote/shells_families.sh (fleet/facts/shells.py _FAMS): at the end of each kind of shell, after the tracked
# variables (@@value), every other EXPORTED variable of the families a GPU job reads (fleet/remote/families.py: the
# prefixes in fleet_prefixes), as `@@fam NAME=VALUE` (a newline in a value printed as a space). Bash's own
# ${!PREFIX@} lists them: no process started. A name that looks like a secret's (fleet_secret, upper-cased) is never
# printed, nor one of the tracked variables (fleet_tracked, printed already).
# shellcheck disable=SC2154  # fleet_prefixes, fleet_secret, fleet_tracked: set by the line before this program
for fleet_p in "${fleet_prefixes[@]}"; do
  eval "fleet_ns=(\"\${!${fleet_p}@}\")"
  for v in "${fleet_ns[@]}"; do
    [[ ${!v@a} == *x* ]] || continue
    if [[ ${v^^} =~ $fleet_secret ]]; then continue; fi
    case $fleet_tracked in *" $v "*) continue ;; esac
    x=${!v}
    printf '@@fam %s=%s\n' "$v" "${x//$'\n'/ }"
  done
done
