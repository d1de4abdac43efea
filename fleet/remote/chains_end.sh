#!/usr/bin/env bash
# fleet/remote/chains_end.sh (fleet/engine/chains.py): wait for the chains, exit 1 where any task failed.
# shellcheck disable=SC2154,SC2086  # fleet_chains, fleet_run: set by chains_start.sh; $fleet_chains: pids, split
# the chains only: a job the script started before them (the lock's watchdog) runs on
wait $fleet_chains
fleet_bad=0
for fleet_f in "$fleet_run"/*.rc; do [ "$(cat -- "$fleet_f")" = 0 ] || fleet_bad=1; done
rm -rf -- "$fleet_run"
exit "$fleet_bad"
