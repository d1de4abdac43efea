#!/usr/bin/env bash
# Issue 48 items 2 and 3 on a lent H200 (one GPU, or x2/x4 for the pairs): verify's copy-engine bandwidths and the
# health grades, as the host measures and reports them.
#
#   run from the project root on the machine, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/copies_health.sh [RUNS]          (default 5)
#
# NVLink multicast stays off in every process: .gpu/env.sh and the bundled sshd set NCCL_NVLS_ENABLE=0 and its kin
# (and /etc/nccl.conf); nothing here unsets them.
# 1. converge (`fleet apply`);
# 2. RUNS forced `fleet verify`s: each run's exit, wall seconds and the host's own verify record's `copies` (every
#    GPU's pinned host copies, every ordered pair's read and write, the seconds they took, the floors) and failed
#    checks, one JSON line each (copies.jsonl);
# 3. `fleet health --json` (the SRAM/DRAM split, remapped rows, Xid and recovery action as fleet grades them), and
#    the same fields asked of nvidia-smi directly (-q -x's <ecc_errors>, --query-remapped-rows, topo -m) for the
#    tests to compare (health.json, smi.txt).
# Writes transcript.txt, setup.txt, copies.jsonl, health.json, smi.txt under $OUT: copy $OUT to
# tests/data/h200-device/copies/ (one GPU) or tests/data/h200-multi/copies-xN/ (N GPUs).
set -u
runs=${1:-5}
source tests/data/h200-device/lib.sh
note "gpus: $(nvidia-smi -L | wc -l); NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset}; /etc/nccl.conf: $(tr '\n' ' ' < /etc/nccl.conf 2>/dev/null)"
note "first apply (converge)"
step F apply "$INV"
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  F verify "$INV" > "$OUT/last.txt" 2>&1; code=$?
  secs=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),2))" "$start")
  tail -n 3 "$OUT/last.txt" | sed "s/^/run $i ($secs s, exit $code): /" >> "$T"
  python3 bench/h200/copies_record.py "$i" "$code" "$secs" /var/lib/fleet/verify.json >> "$OUT/copies.jsonl"
done
note "fleet health, as fleet grades it"
F health "$INV" --json > "$OUT/health.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
{ echo '$ nvidia-smi -q -x | grep ECC and remap lines'
  nvidia-smi -q -x | grep -E '<gpu id=|<(volatile|aggregate)>|sram_|dram_|remapped_row|gpu_recovery_action'
  echo '$ nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv'
  nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv
  echo '$ nvidia-smi topo -m'; nvidia-smi topo -m
  echo '$ dmesg | grep -c NVRM: Xid'; dmesg 2>&1 | grep -c 'NVRM: Xid'
} > "$OUT/smi.txt" 2>&1
rm -f "$OUT/last.txt"
note "done"
