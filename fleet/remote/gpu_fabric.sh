#!/usr/bin/env bash
# fleet/remote/gpu_fabric.sh (fleet/facts/gpu.py FABRIC): the NVLink fabric's facts (see gpu.py for the sources).
# `topo -m` (43 ms on the lent H200), the fabric query (22 ms) and lspci run at once, each into a pipe, and are
# printed in this order as each ends (mapfile: a builtin, the bytes as they came): the section takes the slowest, not
# the sum. Set before this: t (empty, or the words `timeout 30`) and fq (facts/fabric.py FABRIC_QUERY).
# shellcheck disable=SC2154,SC2086  # t, fq: set by the lines before this; $t is split into its words on purpose
fleet_smi=; command -v nvidia-smi >/dev/null 2>&1 && fleet_smi=1
if [ -n "$fleet_smi" ]; then
  exec {fleet_topo}< <($t nvidia-smi topo -m 2>&1)
  # the four fields by query first: 0.02 s on the lent H100 against 0.12 s for all of `-q`; a driver that does not
  # know them refuses the query ("Field ... is not a valid field to query"), and `-q`'s Fabric blocks are read
  exec {fleet_query}< <(if fleet_fq=$($t nvidia-smi --query-gpu="$fq" --format=csv,noheader 2>&1); then
    printf 'csv %s\n' "${fleet_fq//$'\n'/$'\n'csv }"   # each line after "csv ", as sed 's/^/csv /' would
  else $t nvidia-smi -q 2>&1 | grep -E '^GPU [0-9A-F]|^ +Fabric$|^ +(State|Status|CliqueId|Clique ID|ClusterUUID|Cluster UUID) +:'; fi)
fi
fleet_lspci=; command -v lspci >/dev/null 2>&1 &&
  exec {fleet_lspci}< <(lspci -d 10de: 2>/dev/null | grep -ci 'bridge.*nvswitch\|nvswitch' | sed 's/^/lspci /')
if [ -n "$fleet_smi" ]; then
  echo '@@topo'; mapfile -u "$fleet_topo" fleet_l; printf %s "${fleet_l[@]}"
  echo '@@query'; mapfile -u "$fleet_query" fleet_l; printf %s "${fleet_l[@]}"
fi
echo '@@nvswitch'; for d in /dev/nvidia-nvswitch*; do [ -e "$d" ] && echo "$d"; done
[ -z "$fleet_lspci" ] || { mapfile -u "$fleet_lspci" fleet_l; printf %s "${fleet_l[@]}"; }
echo '@@container'
[ -f /.dockerenv ] && echo dockerenv
[ -f /run/.containerenv ] && echo containerenv
while IFS= read -r l; do case $l in *docker*|*kubepods*|*containerd*|*lxc*) echo cgroup; break;; esac; done 2>/dev/null </proc/1/cgroup
echo '@@service'
if command -v systemctl >/dev/null 2>&1; then printf 'systemctl %s\n' "$(systemctl is-active nvidia-fabricmanager 2>/dev/null)"; fi
for p in /proc/[0-9]*/comm; do read -r c < "$p" 2>/dev/null && [ "$c" = nv-fabricmanage ] && { echo process; break; }; done
echo '@@packages'
# shellcheck disable=SC2016  # dpkg-query's own ${Package} fields, not the shell's
command -v dpkg-query >/dev/null 2>&1 && dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' 'nvidia-fabricmanager*' 'libnvidia-nscq*' nvlsm 2>/dev/null
true
