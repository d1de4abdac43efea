#!/usr/bin/env bash
# fleet/remote/chains_start.sh (fleet/engine/chains.py): the apply's chains run at once, each task waiting for the
# results and orders it needs (fleet_ready), its output tagged (fleet_tag), its status kept in $fleet_run (fleet_done).
# shellcheck disable=SC2034  # fleet_chains: read by the lines chains.py writes after this, and chains_end.sh
: "${fleet_lock_dir:=$(mktemp -d)}"
fleet_run="$fleet_lock_dir/apply.run"; rm -rf -- "$fleet_run"; mkdir -m 700 -- "$fleet_run" || exit 125
fleet_chains=
fleet_now() { local t=${EPOCHREALTIME:-}; [ -n "$t" ] || t=$(date +%s.%N); printf %s "${t/,/.}"; }
fleet_put() { printf '%s\n' "$2" > "$fleet_run/$1.rc.tmp" && mv -f -- "$fleet_run/$1.rc.tmp" "$fleet_run/$1.rc"; }
# fleet_ready ID "RESULT IDS" "ORDER IDS": wait for them; 0 when this task may run
fleet_ready() {
  local d
  for d in $2 $3; do while [ ! -e "$fleet_run/$d.rc" ]; do sleep 0.1; done; done
  for d in $2; do
    if [ "$(cat -- "$fleet_run/$d.rc")" != 0 ]; then
      printf '@@fleet:skip apply.%s %s@@\n' "$1" "$d"; fleet_put "$1" 254; return 1
    fi
  done
  printf '@@fleet:begin apply.%s %s@@\n' "$1" "$(fleet_now)"
}
fleet_tag() { local l; while IFS= read -r l || [ -n "$l" ]; do printf '@@fleet:o %s@@ %s\n' "$1" "$l"; done; }
fleet_done() { printf '@@fleet:end apply.%s %d %s@@\n' "$1" "$2" "$(fleet_now)"; fleet_put "$1" "$2"; }
printf '@@fleet:t0 %s@@\n' "$(fleet_now)"
