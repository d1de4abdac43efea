# The 2026-11-25 session's merged main on the lent H100 over real SSH (the carried sshd), from a fresh machine,
# from the project root with .gpu carried: the first apply's chains and host-side timings, the no-op, verify's
# multi-GPU check on one GPU, the fabric facts, fleet run's streaming, and controller CPU of a no-op against
# `fleet run -- true`. Writes transcript.txt and JSON records under $OUT.
set -u
export PYTHONUNBUFFERED=1
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
INV=$GPU_INV
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { local sub=$1; shift; python3 -m fleet "$sub" --accept-new-host-keys "$@"; }
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(head -1 /proc/driver/nvidia/version)"
note "first apply (JSON: each task's chain and its start/end on the host's clock)"
F apply "$INV" --json > "$OUT/first.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
python3 - "$OUT/first.json" >> "$T" 2>&1 <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for host, h in doc["hosts"].items():
    print(host, {k: h.get(k) for k in ("changed", "failed", "ok", "skipped")}, doc["stats"][host])
    for t in h["tasks"]:
        if t.get("started") is not None:
            print(f"  {t['chain']:24s} {t['started']:7.3f} {t['ended']:7.3f}  {t['role']}: {t['task'][:70]}")
PY
note "second apply: nothing to change, one command"
step F apply "$INV"
F apply "$INV" --json > "$OUT/noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
step F apply "$INV" --check --detailed-exitcode
note "verify on one GPU (issue 28: the multi-GPU part degrades to 'one GPU: no links to check')"
step F verify "$INV" -v
step python3 -m fleet decide /tmp/gpu-inventory/facts/h100.json
step python3 -c "import json; f=json.load(open('/tmp/gpu-inventory/facts/h100.json')); print(json.dumps(f.get('fabric'), indent=1)); print(json.dumps((f.get('verify') or {}).get('summary')))"
note "fleet run streams each line as it comes (stdout and stderr apart)"
step F run "$INV" -- 'echo first; echo to-stderr >&2; sleep 1; echo second'
note "controller CPU (user+sys of the fleet process, 5 each): a no-op apply against fleet run -- true"
for i in 1 2 3 4 5; do
  { TIMEFORMAT="apply-noop %R s wall %U user %S sys"; time python3 -m fleet apply "$INV" -q >/dev/null 2>&1; } 2>>"$T"
  { TIMEFORMAT="run-true %R s wall %U user %S sys"; time python3 -m fleet run "$INV" -q -- true >/dev/null 2>&1; } 2>>"$T"
done
grep -E "^(apply-noop|run-true)" "$T" | tail -10
tail -60 "$T"
