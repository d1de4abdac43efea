#!/usr/bin/env bash
# fleet/remote/program_run.sh (fleet/programs.py FUNCTIONS, after bin_ok.sh): fleet_program FILE SHA256:
# ${fleet_at_FILE} (each - an _) is where the section runs it: /var/lib/fleet/bin/FILE where it is trusted and whole;
# else where fleet_install put the text this command carries (fleet_ship_FILE); else it says it is missing
# (@@fleet:program-missing FILE, status 97: fleet.programs MISSING and MISSING_EXIT) and the controller sends
# the text in another command.
fleet_program() {
  local f=fleet_ship_${1//-/_} v=fleet_at_${1//-/_}
  if fleet_bin_ok "$1" "$2"; then printf -v "$v" %s "/var/lib/fleet/bin/$1"; return 0; fi
  if ! declare -F "$f" >/dev/null; then printf '@@fleet:program-missing %s\n' "$1"; return 97; fi
  "$f" "$1" "$2" && [ -n "${!v-}" ]
}
