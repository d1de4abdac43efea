# Shared by the H200 runs under tests/data/h200-device/*/run.sh: source from the project root with .gpu
# carried (../shared/tools/real-gpu-prep.sh .gpu). Sets T (the transcript), INV, FACTS, and step/note/F/ask.
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
ask() { note "asked by a plain SSH client (tests/data/h200-device/ask_kinds.py): $*"
        PYTHONPATH=/tmp/fleet-site python3 tests/data/h200-device/ask_kinds.py 127.0.0.1 2222 root \
          /tmp/fleet-sshd/client_ed25519 >> "$T" 2>&1; }
# Interleaved rounds of the no-op apply, facts and `run -- true`; one line per timing: "<what> <seconds>".
# rounds N [FILE]: FILE under $OUT (default timings.txt).
rounds() { local n=$1 i f=$OUT/${2:-timings.txt}; for i in $(seq "$n"); do
  { TIMEFORMAT="apply-noop %R"; time F apply "$INV" -q >/dev/null 2>&1; } 2>> "$f"
  { TIMEFORMAT="facts %R"; time F facts "$INV" >/dev/null 2>&1; } 2>> "$f"
  { TIMEFORMAT="run-true %R"; time F run "$INV" -q -- true >/dev/null 2>&1; } 2>> "$f"
done
python3 - "$f" >> "$T" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    what, value = line.split()
    rows.setdefault(what, []).append(float(value))
floor = statistics.median(rows["run-true"])
for what, values in rows.items():
    m = statistics.median(values)
    print(f"median of {len(values)}: {what} {m:.3f} s ({m / floor:.2f}x run -- true)")
PY
}
# Bytes of each remote command of one converged apply (stdin as sent, gzip or plain).
record_bytes() { rm -f /tmp/rec.jsonl; BENCH_RECORD=/tmp/rec.jsonl python3 bench/_fleet_recorded.py apply "$INV" >/dev/null 2>&1
  python3 - /tmp/rec.jsonl >> "$T" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"no-op apply command: {len(r['stdin'])} bytes of stdin ({'gzip' if 'gzip -dc' in r['command'] else 'plain'}),"
          f" {len(r['command'])} bytes of command line, exit {r['exit']}")
PY
}
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(head -1 /proc/driver/nvidia/version); $(nproc) cores; fleet tree $(find fleet roles -type f \( -name '*.py' -o -name '*.sh' -o -name '*.yaml' -o -name '*.yml' -o -name '*.j2' -o -name '*.json' \) ! -path '*/__pycache__/*' 2>/dev/null | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)"
