# What each process the probe starts costs on the lent H200, alone and all at once: every nvidia-smi the facts
# start (fleet/facts/gpu.py, health.py), python3 with and without its site, and each kind of bash. Medians of 7,
# milliseconds. Writes costs.txt under $OUT. Run from the project root; needs no .gpu.
set -u
O=$OUT/costs.txt
Q1=$(python3 -c 'import sys; sys.path.insert(0,"."); from fleet.facts import gpu, health; print(gpu.QUERY_FULL)')
Q2=$(python3 -c 'import sys; sys.path.insert(0,"."); from fleet.facts import gpu, health; print(health.FIELDS)')
Q3=$(python3 -c 'import sys; sys.path.insert(0,"."); from fleet.facts import fabric; print(fabric.FABRIC_QUERY)')
R=$(python3 -c 'import sys; sys.path.insert(0,"."); from fleet.facts import gpu, health; print(health.REMAP_FIELDS)')
ALL=$(python3 -c "import sys; f=[]; [f.append(x) for q in sys.argv[1:] for x in q.split(',') if x not in f]; print(','.join(f))" "$Q1" "$Q2" "$Q3")
t() { local name=$1; shift; local i s e ms=(); for i in 1 2 3 4 5 6 7; do s=$EPOCHREALTIME; "$@" >/dev/null 2>&1; e=$EPOCHREALTIME
  ms+=($(( (${e/./} - ${s/./}) / 1000 ))); done
  printf '%-34s %s\n' "$name" "$(printf '%s\n' "${ms[@]}" | sort -n | sed -n 4p) ms (all: ${ms[*]})" >> "$O"; }
echo "persistence: $(nvidia-smi --query-gpu=persistence_mode --format=csv,noheader)" >> "$O"
t "nvidia-smi (header)" nvidia-smi
t "query QUERY_FULL" nvidia-smi --query-gpu="$Q1" --format=csv,noheader,nounits
t "query health FIELDS" nvidia-smi --query-gpu="$Q2" --format=csv,noheader,nounits
t "query FABRIC_QUERY" nvidia-smi --query-gpu="$Q3" --format=csv,noheader
t "query all three in one" nvidia-smi --query-gpu="$ALL" --format=csv,noheader,nounits
t "query-remapped-rows" nvidia-smi --query-remapped-rows="$R" --format=csv,noheader,nounits
t "topo -m" nvidia-smi topo -m
t "-q -x" nvidia-smi -q -x
t "-q" nvidia-smi -q
t "-q -d PCIE" nvidia-smi -q -d PCIE
t "-q -x -d PCIE" nvidia-smi -q -x -d PCIE
all7() { nvidia-smi >/dev/null & nvidia-smi --query-gpu="$Q1" --format=csv >/dev/null & nvidia-smi --query-gpu="$Q2" --format=csv >/dev/null &
  nvidia-smi --query-gpu="$Q3" --format=csv >/dev/null & nvidia-smi --query-remapped-rows="$R" --format=csv >/dev/null &
  nvidia-smi topo -m >/dev/null & nvidia-smi -q -x >/dev/null & wait; }
t "the 7 at once (today's probe)" all7
three() { nvidia-smi --query-gpu="$ALL" --format=csv >/dev/null & nvidia-smi --query-remapped-rows="$R" --format=csv >/dev/null &
  nvidia-smi topo -m >/dev/null & wait; }
t "query-all + remapped + topo at once" three
xtopo() { nvidia-smi -q -x >/dev/null & nvidia-smi topo -m >/dev/null & wait; }
t "-q -x + topo at once" xtopo
t "python3 -c pass" python3 -c pass
t "python3 -S -c pass" python3 -S -c pass
t "python3 -I -c pass" python3 -I -c pass
t "python3 -I -S -c pass" python3 -I -S -c pass
t "venv python -c pass" /opt/torch/.venv/bin/python -c pass
t "venv python -c import torch" /opt/torch/.venv/bin/python -c 'import torch'
t "bash -c true" bash -c true
t "bash -l -c true" bash -l -c true
t "bash -i -c true" bash -i -c true
t "bash -l -i -c true" bash -l -i -c true
t "sh -c true" sh -c true
t "ldconfig -p" ldconfig -p
t "dpkg-query -W" dpkg-query -W
nvidia-smi -q -x > /tmp/qx.xml; wc -c /tmp/qx.xml >> "$O"; grep -c . /tmp/qx.xml >> "$O"
grep -E '<(driver_version|cuda_version|fabric|state|status|cliqueId|remapped_rows|gpu_recovery_action|replay_counter|retired_pages|clocks_event_reasons)' /tmp/qx.xml | head -20 >> "$O"
cat "$O"
