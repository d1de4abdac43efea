#!/usr/bin/env bash
# fleet/remote/health_query.sh (fleet/facts/health.py HEALTH): the GPUs' health fields in ONE nvidia-smi call, asked
# again with the older spelling or without the recovery action where the driver refuses a field (health.py says
# which drivers know which), and the remapped rows meanwhile (a second NVML client at once: the time of the slower,
# not the sum). Set before this: t (empty, or `timeout 30`), fields, recovery, remap_fields; the older spelling of
# the fields (health.FIELDS_THROTTLE) is made from them here, as Python makes it.
# shellcheck disable=SC2154,SC2086  # t and the fields: set by the lines before this; $t is split on purpose
command -v nvidia-smi >/dev/null 2>&1 || { echo '@@missing'; exit 0; }
exec {fleet_rr}< <($t nvidia-smi --query-remapped-rows="$remap_fields" --format=csv,noheader,nounits 2>&1)
fq() { $t nvidia-smi --query-gpu="$1" --format=csv,noheader,nounits 2>&1; }
out=$(fq "$fields,$recovery"); rc=$?; spelling=event; extra=" $recovery"
case $out in *"\"$recovery\" is not a valid field"*)
  printf '@@rejected %s\n' "${out%%$'\n'*}"
  out=$(fq "$fields"); rc=$?; extra=;; esac
case $out in *'not a valid field'*)
  printf '@@rejected %s\n' "${out%%$'\n'*}"
  out=$(fq "${fields//clocks_event_reasons./clocks_throttle_reasons.}"); rc=$?; spelling=throttle; extra=;; esac
printf '@@query %s %s%s\n%s\n@@remap\n' "$spelling" "$rc" "$extra" "$out"
mapfile -u "$fleet_rr" rr; printf '%s' "${rr[@]}"
true
