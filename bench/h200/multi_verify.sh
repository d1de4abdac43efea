#!/usr/bin/env bash
# Issue 48 on a lent multi-GPU H200 (x2 or x4): verify's multi-GPU proof repeated, for floors from measurement.
#
#   run from the project root on the machine, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/multi_verify.sh [RUNS]          (default 20)
#
# NVLink multicast stays off in every process: .gpu/env.sh and the bundled sshd set NCCL_NVLS_ENABLE=0 and its kin
# (and /etc/nccl.conf); nothing here unsets them.
# 1. converge (`fleet apply`; the inventory names the image's torch venv);
# 2. RUNS forced `fleet verify`s, one after another: each run's recap row, wall seconds and the host's own verify
#    record's links (all-reduce bus bandwidth, topology) and bandwidth rows, one JSON line each (runs.jsonl);
# 3. a degraded link made by hand: `export NCCL_P2P_DISABLE=1` at the top of root's ~/.bashrc (the environment
#    `ssh host cmd` and verify run in), a forced verify, what fleet says; the line taken out again.
# Writes transcript.txt, setup.txt and runs.jsonl under $OUT (tests/data/h200-multi/).
set -u
runs=${1:-20}
source tests/data/h200-device/lib.sh
note "gpus: $(nvidia-smi -L | wc -l); NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset}; /etc/nccl.conf: $(tr '\n' ' ' < /etc/nccl.conf 2>/dev/null)"
note "first apply (converge)"
step F apply "$INV"
record_run() {   # $1: label; after a verify: one JSON line of the host's own record
  python3 - "$1" "$2" "$3" >> "$OUT/runs.jsonl" <<'PY'
import json, sys
label, code, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
r = json.load(open("/var/lib/fleet/verify.json"))
print(json.dumps({"run": label, "exit": code, "seconds": secs, "passed": r.get("passed"),
                  "links": r.get("links"), "bandwidth": r.get("bandwidth"),
                  "failed": [c for c in r.get("checks", []) if not c.get("passed")]}))
PY
}
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  F verify "$INV" > "$OUT/last.txt" 2>&1; code=$?
  secs=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),2))" "$start")
  grep -E "^h100	" "$OUT/last.txt" | sed "s/^/run $i ($secs s, exit $code): /" >> "$T"
  record_run "$i" "$code" "$secs"
done
note "a degraded link made by hand: export NCCL_P2P_DISABLE=1 at the top of ~/.bashrc"
cp -p /root/.bashrc /root/.bashrc.multi
sed -i '1i export NCCL_P2P_DISABLE=1' /root/.bashrc
start=$(date +%s.%N)
step F verify "$INV"
record_run "p2p-disabled" "$(tail -1 "$T" | tr -dc 0-9)" "$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),2))" "$start")"
mv -f /root/.bashrc.multi /root/.bashrc
note "the line taken out: verify again"
step F verify "$INV"
rm -f "$OUT/last.txt"
note "done"
