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
# The limits a job started in this kind gets (ulimit's own answer: no process), and the VAR=VALUE lines NCCL reads
# from its config files where the environment lacks the name (NCCL's "Environment Variables"; its param.cc: the
# user's file, $NCCL_CONF_FILE else ~/.nccl.conf, then /etc/nccl.conf, the environment and the first file first):
# `@@nccl NAME=VALUE<TAB>FILE<TAB>LINE`, a name that looks like a secret's never printed.
printf '@@limit memlock '; ulimit -l; printf '@@limit nofile '; ulimit -n
declare -A fleet_nc; for f in "${NCCL_CONF_FILE:-$HOME/.nccl.conf}" /etc/nccl.conf; do [[ -r $f && -f $f ]] || continue; n=0
  while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); l=${l#"${l%%[![:space:]]*}"}
    [[ $l =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*) ]] || continue; v=${BASH_REMATCH[1]}
    if [[ ${v^^} =~ $fleet_secret ]] || [ -n "${!v+x}${fleet_nc[$v]-}" ]; then continue; fi
    printf '@@nccl %s\t%s\t%s\n' "${l//$'\t'/ }" "$f" "$n"; fleet_nc[$v]=1
  done < "$f"
done
