# The second session's final main on the lent H200 (2026-11-26, evening): converge, the no-op's bytes, the host's own
# time per probe section for a no-op and for `fleet facts` (bench/sections.py), 9 interleaved rounds of no-op /
# facts / run -- true, every kind of shell asked, a forced `fleet verify` and `fleet health`. Writes transcript.txt,
# setup.txt, timings.txt and sections.txt under $OUT.
set -u
source tests/data/h200-device/lib.sh
note "first apply"
step F apply "$INV"
note "second apply: nothing to change, one command"
step F apply "$INV"
record_bytes
note "the host's own time per section (bench/sections.py): 3 no-op applies, then 3 fleet facts"
for i in 1 2 3; do python3 bench/sections.py apply "$INV" -q 2>> "$OUT/sections.txt" >/dev/null; done
echo "== fleet facts" >> "$OUT/sections.txt"
for i in 1 2 3; do python3 bench/sections.py facts "$INV" 2>> "$OUT/sections.txt" >/dev/null; done
grep WHOLE-COMMAND "$OUT/sections.txt" >> "$T"
rounds 9
ask "converged"
step F verify "$INV"
python3 -c "import json; r=json.load(open('$FACTS')); v=r.get('verify') or {}; print('load', json.dumps(v.get('load', {}).get('gpus'))); print('batches', (v.get('load') or {}).get('batches')); print('bandwidth', json.dumps(v.get('bandwidth')))" >> "$T" 2>&1
step F health "$INV" --set 'expect_gpus=1x H200'
note "third apply after verify and health: still one command"
step F apply "$INV"
grep -E "^median|no-op apply command|WHOLE" "$T"
