#!/usr/bin/env bash
# fleet/remote/frame.sh (fleet/sections.py together): the frame of a background section, defined once at the top of
# a script that starts any (a probe starts ~40: written out in each, the frame was ~650 B of the gzipped probe).
# fleet_begin NAME: what the section's own shell runs first (sections._in_own_shell): the begin marker, an EXIT trap
# printing the end marker with the body's status (its `exit N` included), stdin /dev/null and stderr into stdout.
# NAME is a section name (letters, digits and . _ : -: sections._NAME_RE), so it stands in the trap's text as it is.
fleet_begin() {
  printf '\n@@fleet:begin %s@@\n' "$1"
  # shellcheck disable=SC2064  # the name now, the status when the shell ends
  trap "printf '\\n@@fleet:end $1 %d@@\\n' \"\$?\"" EXIT
  exec 2>&1 </dev/null
}
# fleet_collect VAR: prints what the section started on the descriptor in $VAR printed (waiting for it to end) and
# closes it. mapfile, not cat: a builtin. VAR is fleet_bg_ and a section's name in letters, digits and _.
fleet_collect() {
  mapfile -u "${!1}" fleet_lines
  eval "exec {$1}<&-"
  printf %s "${fleet_lines[@]}"
}
