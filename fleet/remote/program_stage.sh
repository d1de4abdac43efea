#!/usr/bin/env bash
# fleet/remote/program_stage.sh (fleet/programs.py STAGE): fleet_install in --check, which writes nothing of
# the host's: a private copy in a temporary directory of the connecting user's (mktemp -d, 0700), its digest checked
# and judged by fleet_trust, removed when the section ends (its EXIT trap).
fleet_stage=
fleet_install() {
  local h t
  if [ -z "$fleet_stage" ]; then
    fleet_stage=$(mktemp -d "${TMPDIR:-/tmp}/fleet-check.XXXXXX") || { echo "fleet: no temporary directory to run $1 from"; return 1; }
    trap 'rm -rf -- "$fleet_stage"' EXIT
  fi
  t=$fleet_stage/$1
  if cat > "$t" && h=$(sha256sum < "$t") && [ "${h%% *}" = "$2" ] && chmod 0500 "$t" && [ -z "$(fleet_trust "$t" 2>&1)" ]; then
    printf -v "fleet_at_${1//-/_}" %s "$t"; return 0
  fi
  echo "fleet: could not run $1 from a temporary copy ($fleet_stage: --check installs nothing)"; return 1
}
