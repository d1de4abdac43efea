t=; command -v timeout >/dev/null 2>&1 && t='timeout 30'
if command -v nvidia-smi >/dev/null 2>&1; then
  echo '@@topo'; $t nvidia-smi topo -m 2>&1
  echo '@@query'
  if fleet_fq=$($t nvidia-smi --query-gpu=pci.bus_id,fabric.state,fabric.status,fabric.cliqueId --format=csv,noheader 2>&1); then
    printf '%s\n' "$fleet_fq" | sed 's/^/csv /'
  else $t nvidia-smi -q 2>&1 | grep -E '^GPU [0-9A-F]|^ +Fabric$|^ +(State|Status|CliqueId|Clique ID|ClusterUUID|Cluster UUID) +:'; fi
fi
echo '@@nvswitch'; for d in /dev/nvidia-nvswitch*; do [ -e "$d" ] && echo "$d"; done
command -v lspci >/dev/null 2>&1 && lspci -d 10de: 2>/dev/null | grep -ci 'bridge.*nvswitch\|nvswitch' | sed 's/^/lspci /'
echo '@@container'
[ -f /.dockerenv ] && echo dockerenv
[ -f /run/.containerenv ] && echo containerenv
grep -qaE 'docker|kubepods|containerd|lxc' /proc/1/cgroup 2>/dev/null && echo cgroup
echo '@@service'
if command -v systemctl >/dev/null 2>&1; then printf 'systemctl %s\n' "$(systemctl is-active nvidia-fabricmanager 2>/dev/null)"; fi
for p in /proc/[0-9]*/comm; do read -r c < "$p" 2>/dev/null && [ "$c" = nv-fabricmanage ] && { echo process; break; }; done
echo '@@packages'
command -v dpkg-query >/dev/null 2>&1 && dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' 'nvidia-fabricmanager*' 'libnvidia-nscq*' 2>/dev/null
true