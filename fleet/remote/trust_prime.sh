#!/usr/bin/env bash
# fleet_trust_prime: only a probe's script defines it (fleet/facts/probe.py prime), after trust.sh; a snippet
# that carries trust.sh into a bash of its own (sudo, timeout) carries none of it. See trust.sh's notes.
fleet_trust_prime() {
  # fleet_trust_rec: read by fleet_trust, called below (bash's dynamic scope); fleet_j= is an empty local
  # shellcheck disable=SC2034,SC1007
  local fleet_p fleet_j= fleet_trust_rec=1
  local -a fleet_a=() fleet_s
  # the inner loop reuses fleet_p: the outer list (the arguments) was expanded before it, so nothing is lost
  # shellcheck disable=SC2165,SC2167
  for fleet_p; do
    [ "$fleet_p" != --judge ] || { fleet_j=1; continue; }
    if [ -n "$fleet_j" ]; then fleet_judge_paths "$fleet_p"; else fleet_s=("$fleet_p"); fi
    for fleet_p in "${fleet_s[@]}"; do case $fleet_p in *$'\n'*) ;; /*) fleet_a+=("$fleet_p");; esac; done
  done
  fleet_trust "${fleet_a[@]}" >/dev/null
}
