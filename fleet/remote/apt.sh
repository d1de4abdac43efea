#!/usr/bin/env bash
# fleet/remote/apt.sh (fleet/resources/apt.py APT_RETRY)
# `fleet_apt SECONDS CMD...`: run CMD; while it fails on a lock someone else holds, wait and retry, for at most
# SECONDS in all. When apt says dpkg was interrupted, repair that once (dpkg --configure -a) and retry. Any other
# failure ends it at once with CMD's status and output. (Reacting to apt's own words, not reading
# /var/lib/dpkg/updates: files there also mean a dpkg that is running right now.)
fleet_apt() {
  local fleet_deadline=$((SECONDS + $1)) fleet_repaired='' fleet_rc fleet_out; shift
  while :; do
    fleet_rc=0; fleet_out=$("$@" 2>&1) || fleet_rc=$?
    printf '%s\n' "$fleet_out"
    [ "$fleet_rc" -eq 0 ] && return 0
    case "$fleet_out" in
      *"dpkg was interrupted"*)
        [ -z "$fleet_repaired" ] || return "$fleet_rc"
        fleet_repaired=1; echo "fleet: dpkg was interrupted earlier; running dpkg --configure -a"
        fleet_apt $((fleet_deadline - SECONDS)) dpkg --force-confold --configure -a || return $?
        continue ;;
      *"Could not get lock"*|*"Unable to lock"*|*"Unable to acquire the dpkg"*|*"dpkg status database is locked"*) ;;
      *) return "$fleet_rc" ;;
    esac
    if [ "$SECONDS" -ge "$fleet_deadline" ]; then echo "fleet: gave up waiting for the apt/dpkg lock"; return "$fleet_rc"; fi
    echo "fleet: apt/dpkg is busy (another apt run holds its lock); waiting"
    sleep 3
  done
}
