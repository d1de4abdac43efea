#!/usr/bin/env bash
# fleet/remote/script_driver.sh (fleet/workflows/script_runtime.py): $fleet_driver, the kernel driver's version read
# as the facts probe does (fleet.facts.gpu.DRIVER / parse_driver_version).
# shellcheck disable=SC2034  # fleet_driver: read by the lines script_runtime.py writes after this
fleet_driver=''
for fleet_f in /proc/driver/nvidia/version /sys/module/nvidia/version; do
  [ -r "$fleet_f" ] || continue
  fleet_driver=$(sed -nE 's/.*Kernel Module( +for +[^ ]+)? +([0-9]+(\.[0-9]+)+).*/\2/p; s/^[[:space:]]*([0-9]+(\.[0-9]+)+)[[:space:]]*$/\1/p' "$fleet_f" | head -n 1)
  break
done
