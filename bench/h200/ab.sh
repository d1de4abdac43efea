#!/usr/bin/env bash
# Two fleet trees on ONE lease of the lent H200 (each lease is another VM: `run -- true` took 0.50-0.80 s across
# them, so ratios from two leases compare machines as much as code). The tree under test is the project root; the
# other is a copy of an earlier commit's fleet/, roles/, bench/ and tests/data/h200-device/{lib.sh,ask_kinds.py}
# under .ab/base (git archive COMMIT ... | tar -x -C .ab/base; carried with .gpu).
#
#   bash bench/h200/ab.sh      (from the project root on the H200, .gpu and .ab carried)
#
# Both converge the host, then: each tree's bench/sections.py over 5 no-op applies (the probe timed on the host), and
# $ROUNDS (default 9) interleaved rounds of base and new no-op apply, `fleet facts` and `fleet run -- true` (each
# tree first in every other round), fleet's bytecode compiled for both (an installed fleet's case). Writes $OUT/transcript.txt, $OUT/ab.txt ("<tree>-<what> <seconds>" lines)
# and $OUT/sections-{base,new}.txt.
set -u
source tests/data/h200-device/lib.sh
unset PYTHONDONTWRITEBYTECODE; export -n PYTHONDONTWRITEBYTECODE
python3 -m compileall -q fleet .ab/base/fleet /tmp/fleet-site >/dev/null 2>&1
note "converge with the tree under test, then with the base, then each once more (in state, one command)"
step F apply "$INV"
(cd .ab/base && step F apply "$INV")
step F apply "$INV" -q
(cd .ab/base && step F apply "$INV" -q)
for tree in base new; do
  dir=.; [ "$tree" = base ] && dir=.ab/base
  note "$tree: bench/sections.py --repeat 5 apply"
  (cd "$dir" && python3 bench/sections.py --repeat 5 apply "$INV" --accept-new-host-keys -q > /dev/null \
     2> "$OUT/sections-$tree.txt")
  grep -E "WHOLE-COMMAND|facts\.shells$|end:facts\.(shells|verify_fingerprint)$" "$OUT/sections-$tree.txt" >> "$T"
done
ROUNDS=${ROUNDS:-9}
for i in $(seq "$ROUNDS"); do
  order="base new"; [ $((i % 2)) = 0 ] && order="new base"   # each goes first in every other round
  for tree in $order; do
    dir=.; [ "$tree" = base ] && dir=.ab/base
    (cd "$dir"
     { TIMEFORMAT="$tree-apply-noop %R"; time F apply "$INV" -q >/dev/null 2>&1; } 2>> "$OUT/ab.txt"
     { TIMEFORMAT="$tree-facts %R"; time F facts "$INV" >/dev/null 2>&1; } 2>> "$OUT/ab.txt"
     { TIMEFORMAT="$tree-run-true %R"; time F run "$INV" -q -- true >/dev/null 2>&1; } 2>> "$OUT/ab.txt")
  done
done
python3 - "$OUT/ab.txt" >> "$T" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    what, value = line.split()
    rows.setdefault(what, []).append(float(value))
for tree in ("base", "new"):
    floor = statistics.median(rows[f"{tree}-run-true"])
    for what in ("apply-noop", "facts", "run-true"):
        m = statistics.median(rows[f"{tree}-{what}"])
        print(f"{tree}: median of {len(rows[f'{tree}-{what}'])}: {what} {m:.3f} s ({m / floor:.2f}x run -- true)")
PY
grep -E "^(base|new):" "$T"
