#!/usr/bin/env bash
# fleet/remote/bin_ok.sh (fleet/programs.py HAVE, after bin_trusted.sh): fleet_bin_ok FILE SHA256:
# /var/lib/fleet/bin/FILE is trusted (fleet_bin_trusted) and holds that digest.
fleet_bin_ok() {
  local h; fleet_bin_trusted "/var/lib/fleet/bin/$1" && h=$(sha256sum < "/var/lib/fleet/bin/$1" 2>/dev/null) && [ "${h%% *}" = "$2" ]
}
