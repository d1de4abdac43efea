# Where a converged H200 host's no-op goes: run from the project root on the lent machine with .gpu carried.
# Converges, then: the host's own time per probe section (bench/sections.py), the controller's import time and a
# cProfile of one no-op apply and one `fleet facts`, and the bare costs beside them (python start, fleet's import,
# one SSH command). Writes transcript.txt, setup.txt and profile-*.txt under $OUT.
set -u
source tests/data/h200-device/lib.sh
F apply "$INV" >> "$T" 2>&1; F apply "$INV" >> "$T" 2>&1
note "sections of a no-op apply, timed on the host (3 runs)"
for i in 1 2 3; do python3 bench/sections.py apply "$INV" -q 2>> "$OUT/profile-sections.txt" >/dev/null; done
note "sections of fleet facts (3 runs)"
echo "== fleet facts" >> "$OUT/profile-sections.txt"
for i in 1 2 3; do python3 bench/sections.py facts "$INV" 2>> "$OUT/profile-sections.txt" >/dev/null; done
note "bare costs (5 each)"
for i in 1 2 3 4 5; do
  { TIMEFORMAT="python-start %R"; time python3 -c pass; } 2>> "$T"
  { TIMEFORMAT="import-fleet-cli %R"; time python3 -c 'import fleet.cli'; } 2>> "$T"
  { TIMEFORMAT="fleet-help %R"; time python3 -m fleet --help >/dev/null; } 2>> "$T"
  { TIMEFORMAT="run-true %R"; time F run "$INV" -q -- true >/dev/null 2>&1; } 2>> "$T"
  { TIMEFORMAT="apply-noop %R"; time F apply "$INV" -q >/dev/null 2>&1; } 2>> "$T"
  { TIMEFORMAT="facts %R"; time F facts "$INV" >/dev/null 2>&1; } 2>> "$T"
  { TIMEFORMAT="check %R"; time F apply "$INV" --check -q >/dev/null 2>&1; } 2>> "$T"
done
python3 -X importtime -m fleet apply "$INV" -q 2> /tmp/importtime.txt >/dev/null
sort -t'|' -k2 -n -r /tmp/importtime.txt | head -50 > "$OUT/profile-importtime-top.txt"
for what in apply facts run; do
  case $what in run) args="run $INV -q -- true";; apply) args="apply $INV -q";; facts) args="facts $INV";; esac
  python3 bench/_fleet_cprofile.py "$OUT/profile-cprofile-$what.txt" $args >/dev/null 2>&1 || true
done
python3 bench/_fleet_phases.py apply "$INV" -q 2>&1 >/dev/null | grep '^@@phases' | sed 's/^/apply /' > "$OUT/profile-phases.txt"
python3 bench/_fleet_phases.py facts "$INV" 2>&1 >/dev/null | grep '^@@phases' | sed 's/^/facts /' >> "$OUT/profile-phases.txt"
