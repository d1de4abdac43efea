#!/usr/bin/env bash
# fleet/remote/verify_gate.sh (fleet/resources/verify_gate.py gated): after $fleet_fp_parts holds the host's parts of
# the fingerprint (and verify's variables), its digest and parts are printed ("@@fleet:fingerprint HEX@@", then one
# "@@fp PART" line each: verify_gate._FP and _PART), and the host answers "@@fleet:verify-reused@@" (_REUSED) and ends
# where its own verify record ($fleet_vf) PASSED, holds this fingerprint and is at most $fleet_max_age seconds old;
# $fleet_allow empty: verify runs whatever the fingerprint says. A unit test holds the markers equal to Python's.
# shellcheck disable=SC2154  # fleet_fp_parts, fleet_vf, fleet_allow, fleet_max_age: set before this
fleet_fp=$(sha256sum <<< "$fleet_fp_parts"); fleet_fp=${fleet_fp:0:16}
printf '@@fleet:fingerprint %s@@\n' "$fleet_fp"
while IFS= read -r fleet_l; do printf '@@fp %s\n' "$fleet_l"; done <<< "$fleet_fp_parts"
if [ -n "$fleet_allow" ] && [ -r "$fleet_vf" ]; then
  # the record's top-level "fingerprint": "HEX" and "passed": true lines (json.dumps with indent=1 puts each
  # top-level key on its own line, one space in; a check's own "passed" is indented deeper)
  # shellcheck disable=SC1007  # two empty assignments
  fleet_last= fleet_passed=
  while IFS= read -r fleet_l || [ -n "$fleet_l" ]; do
    if [[ $fleet_l =~ ^\ \"fingerprint\":\ *\"([0-9a-f]*)\" ]]; then fleet_last=${BASH_REMATCH[1]}
    elif [[ $fleet_l =~ ^\ \"passed\":\ *true ]]; then fleet_passed=yes; fi
  done < "$fleet_vf"
  fleet_age=$(( ${EPOCHSECONDS:-$(date +%s)} - $(stat -c %Y "$fleet_vf") ))
  if [ -n "$fleet_passed" ] && [ "$fleet_last" = "$fleet_fp" ] && [ "$fleet_age" -le "$fleet_max_age" ]; then echo '@@fleet:verify-reused@@'; exit 0; fi
fi
