# The 2026-11-25 (second) session's merged main on the lent H100 over real SSH (the carried sshd), from a fresh
# machine, from the project root with .gpu carried (asyncssh's wheel added to .gpu/whl). Writes under $OUT:
# transcript.txt; first.json / noop.json (apply --json); replay-h100.* (every remote command of a converged
# apply, facts and run -- true, recorded with its answer, for bench/controller.py); the controller benchmark
# on this machine's 16 cores against the lab's recording and against the H100's own.
set -u
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"   # 1,000 simulated hosts: a socket each, twice
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
python3 -m pip install -q --no-index --find-links .gpu/whl --target /tmp/fleet-site asyncssh >> "$OUT/setup.txt" 2>&1
INV=$GPU_INV
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(head -1 /proc/driver/nvidia/version); $(nproc) cores"
note "nvidia-smi's fabric fields by query (the probe's fast path) against -q (its fallback), 3 each"
for i in 1 2 3; do
  step bash -c 'TIMEFORMAT="query %R s"; time nvidia-smi --query-gpu=pci.bus_id,fabric.state,fabric.status,fabric.cliqueId,fabric.clusterUuid --format=csv,noheader'
  step bash -c 'TIMEFORMAT="-q %R s"; time nvidia-smi -q >/dev/null'
done
note "first apply"
F apply "$INV" --json > "$OUT/first.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
python3 -c "import json,sys; d=json.load(open('$OUT/first.json')); [print(h, {k: v.get(k) for k in ('changed','failed','ok','skipped','verify')}, d['stats'][h]) for h, v in d['hosts'].items()]" >> "$T" 2>&1
note "second apply: nothing to change, one command"
step F apply "$INV"
F apply "$INV" --json > "$OUT/noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
step F apply "$INV" --check --detailed-exitcode
step F verify "$INV"
note "record a converged apply, facts and run -- true with their answers (bench/_fleet_recorded.py)"
export XDG_STATE_HOME=/tmp/fleet-state
for cmd in "apply $INV" "facts $INV" "run $INV -- true"; do
  BENCH_RECORD=$OUT/replay-h100.jsonl python3 bench/_fleet_recorded.py $cmd >> "$T" 2>&1; printf '[recorded %s: exit %s]\n' "${cmd%% *}" "$?" >> "$T"
done
python3 - "$OUT/replay-h100.jsonl" >> "$T" 2>&1 <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['host']}: {len(r['stdin'])} bytes of stdin ({'gzip' if 'gzip -dc' in r['command'] else 'plain'}), "
          f"exit {r['exit']}, {len(r['stdout'])} bytes of stdout")
PY
cp /tmp/gpu-inventory/facts/h100.json "$OUT/replay-h100-facts-h100.json"
cp "$INV" "$OUT/replay-h100-inventory.yaml"
note "controller CPU on the real host (user+sys, 5 each): a no-op apply against fleet run -- true"
for i in 1 2 3 4 5; do
  { TIMEFORMAT="apply-noop %R s wall %U user %S sys"; time python3 -m fleet apply "$INV" -q >/dev/null 2>&1; } 2>>"$T"
  { TIMEFORMAT="run-true %R s wall %U user %S sys"; time python3 -m fleet run "$INV" -q -- true >/dev/null 2>&1; } 2>>"$T"
done
note "the controller benchmark against the lab's recording (bench/data/replay-lab)"
python3 bench/controller.py --hosts 100,1000 --rounds 3 --json "$OUT/controller-lab.json" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"
note "the controller benchmark against this H100's own recording"
mkdir -p /tmp/replay/replay-h100-facts && gzip -c "$OUT/replay-h100.jsonl" > /tmp/replay/replay-h100.jsonl.gz
cp "$OUT/replay-h100-facts-h100.json" /tmp/replay/replay-h100-facts/h100.json
python3 -c "import yaml; d=yaml.safe_load(open('$INV')); print(yaml.safe_dump({'vars': d.get('vars') or {}, 'hosts': d['hosts']}))" > /tmp/replay/replay-h100.yaml
python3 bench/controller.py --recording /tmp/replay/replay-h100.jsonl.gz --hosts 1000 --rounds 3 --json "$OUT/controller-h100.json" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"
grep -E "^(apply-noop|run-true)" "$T" | tail -10
tail -40 "$T"
