#!/usr/bin/env bash
# Issue 48 (items 1, 5) and issue 45 (item 3) on a lent multi-GPU H200 (x2 or x4): verify's multi-GPU proof repeated
# against the all-reduce floors (fleet/knowledge/allreduce.py), a degraded link made by hand in two kinds of shell.
#
#   run from the project root on the machine, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/multi_verify.sh [RUNS]          (default 20)
#   then copy $OUT to tests/data/h200-multi/floors-x2/ (or floors-x4/, by the GPU count the first note shows);
#   tests/unit/test_h200_allreduce_floors_records.py loads every floors-x* it finds.
#
# NVLink multicast stays off in every process: .gpu/env.sh and the bundled sshd set NCCL_NVLS_ENABLE=0 and its kin
# (and /etc/nccl.conf); nothing here unsets them.
# 1. converge (`fleet apply`; the inventory names the image's torch venv);
# 2. RUNS forced `fleet verify`s, one after another: each run's recap row, wall seconds and the host's own verify
#    record's links (the all-reduce: bus bandwidth, verdict, the row it was judged by, the message size, NVLS, each
#    part's seconds against the budget), one JSON line each (runs.jsonl); summary.json: their spread;
# 3. a degraded link made by hand: `export NCCL_P2P_DISABLE=1` at the top of root's ~/.bashrc (the environment
#    `ssh host cmd` and verify run in), a forced verify; then the same line at the top of ~/.profile only (login
#    shells: verify's own all-reduce is fast, the login kind's is not), a forced verify; a user's own all-reduce in
#    each kind asked by a plain SSH client before each (bench/h200/ask_allreduce.py); the lines taken out again.
# Writes transcript.txt, setup.txt, runs.jsonl, summary.json under $OUT.
set -u
runs=${1:-20}
source tests/data/h200-device/lib.sh
note "gpus: $(nvidia-smi -L | wc -l); NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset}; /etc/nccl.conf: $(tr '\n' ' ' < /etc/nccl.conf 2>/dev/null)"
note "first apply (converge)"
step F apply "$INV"
record_run() {   # $1: label, $2: exit, $3: seconds; after a verify: one JSON line of the host's own record
  python3 - "$1" "$2" "$3" >> "$OUT/runs.jsonl" <<'PY'
import json, sys
label, code, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
r = json.load(open("/var/lib/fleet/verify.json"))
print(json.dumps({"run": label, "exit": code, "seconds": secs, "passed": r.get("passed"),
                  "links": r.get("links"), "bandwidth": r.get("bandwidth"),
                  "failed": [c for c in r.get("checks", []) if not c.get("passed")],
                  "allreduce_checks": [c for c in r.get("checks", []) if c.get("name", "").startswith("allreduce")]}))
PY
}
since() { python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),2))" "$1"; }
ask_ar() { note "a user's all-reduce in each kind, asked by a plain SSH client (bench/h200/ask_allreduce.py): $*"
  PYTHONPATH=/tmp/fleet-site python3 bench/h200/ask_allreduce.py 127.0.0.1 2222 root /tmp/fleet-sshd/client_ed25519 \
    >> "$T" 2>&1; }
forced() {   # $1: label: a forced verify, its recap row and record
  local start code
  start=$(date +%s.%N)
  F verify "$INV" > "$OUT/last.txt" 2>&1; code=$?
  { printf '\n$ fleet verify (%s): exit %s, %s s\n' "$1" "$code" "$(since "$start")"; cat "$OUT/last.txt"; } >> "$T"
  record_run "$1" "$code" "$(since "$start")"
}
ask_ar "converged, nothing set by hand"
for i in $(seq "$runs"); do
  forced "$i"
done
python3 - "$OUT/runs.jsonl" > "$OUT/summary.json" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if json.loads(line)["run"].isdigit()]
bus = [r["links"]["allreduce"]["busbw"] for r in runs]
secs = [r["seconds"] for r in runs]
parts = {}
for r in runs:
    for k, v in (r["links"].get("time") or {}).items():
        if k.endswith("_s") and k != "budget_s":
            parts.setdefault(k, []).append(v)
spread = lambda xs: {"min": min(xs), "median": statistics.median(xs), "max": max(xs),
                     "stdev": round(statistics.pstdev(xs), 2)}
print(json.dumps({"runs": len(runs), "passed": sum(r["exit"] == 0 for r in runs), "busbw": spread(bus),
                  "seconds": spread(secs), "time_parts": {k: spread(v) for k, v in parts.items()},
                  "row": runs[0]["links"]["allreduce"].get("row"), "bytes": runs[0]["links"]["allreduce"]["bytes"],
                  "nvls": runs[0]["links"]["allreduce"].get("nvls")}, indent=1))
PY
cat "$OUT/summary.json" >> "$T"
cp -p /root/.bashrc /root/.bashrc.multi; cp -p /root/.profile /root/.profile.multi
note "a degraded link made by hand: export NCCL_P2P_DISABLE=1 at the top of ~/.bashrc"
sed -i '1i export NCCL_P2P_DISABLE=1' /root/.bashrc
ask_ar "NCCL_P2P_DISABLE=1 in ~/.bashrc"
forced "p2p-disabled-bashrc"
mv -f /root/.bashrc.multi /root/.bashrc
note "the same line at the top of ~/.profile only (login shells)"
sed -i '1i export NCCL_P2P_DISABLE=1' /root/.profile
ask_ar "NCCL_P2P_DISABLE=1 in ~/.profile"
forced "p2p-disabled-profile"
mv -f /root/.profile.multi /root/.profile
note "the lines taken out: verify again"
forced "after"
rm -f "$OUT/last.txt"
note "done"
