#!/usr/bin/env bash
# Where a no-op `fleet facts` spends its time on ONE lease, for two trees (as bench/h200/ab.sh: .ab/base carried):
# the whole command (wall), the controller's CPU (user+sys), the remote command's round trip as the controller saw it
# and the script's time on the host (bench/_fleet_profiled.py). ROUNDS alternating (default 10). Writes
# $OUT/split.txt ("<tree> wall cpu rtt onhost" lines) and a summary of medians to $OUT/transcript.txt.
set -u
source tests/data/h200-device/lib.sh
unset PYTHONDONTWRITEBYTECODE; export -n PYTHONDONTWRITEBYTECODE
python3 -m compileall -q fleet .ab/base/fleet /tmp/fleet-site >/dev/null 2>&1
F apply "$INV" -q >> "$T" 2>&1; (cd .ab/base && F apply "$INV" -q) >> "$T" 2>&1
F apply "$INV" -q >> "$T" 2>&1; (cd .ab/base && F apply "$INV" -q) >> "$T" 2>&1
for i in $(seq "${ROUNDS:-10}"); do
  order="base new"; [ $((i % 2)) = 0 ] && order="new base"
  for tree in $order; do
    dir=$PWD; [ "$tree" = base ] && dir=$PWD/.ab/base
    (cd "$dir"; rm -f /tmp/remote.log
     t=$( { TIMEFORMAT="%R %U %S"; time BENCH_REMOTE_LOG=/tmp/remote.log python3 bench/_fleet_profiled.py facts "$INV" \
            >/dev/null 2>&1; } 2>&1 )
     set -- $t; read -r _ onhost rtt < /tmp/remote.log
     echo "$tree $1 $(python3 -c "print($2 + $3)") $rtt $onhost" >> "$OUT/split.txt")
  done
done
python3 - "$OUT/split.txt" >> "$T" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tree, *v = line.split()
    rows.setdefault(tree, []).append([float(x) for x in v])
for tree, v in sorted(rows.items()):
    med = [statistics.median(c) for c in zip(*v)]
    print(f"{tree}: median of {len(v)}: wall {med[0]:.3f}  controller cpu {med[1]:.3f}  round trip {med[2]:.3f}  "
          f"on the host {med[3]:.3f}  round trip - on host {med[2] - med[3]:.3f}")
PY
grep -E "^(base|new): median" "$T"
