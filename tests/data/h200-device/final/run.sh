# The session's final main on the lent H200 (after the fixes the merged suite and the first after-run asked for):
# converge, the no-op's bytes, 9 interleaved rounds of no-op / facts / run -- true, every kind of shell asked, and a
# forced `fleet verify` (the perf smoke, the bandwidths and the load samples on the real GPU). Writes transcript.txt,
# setup.txt and timings.txt under $OUT.
set -u
source tests/data/h200-device/lib.sh
note "first apply"
step F apply "$INV"
note "second apply: nothing to change, one command"
step F apply "$INV"
record_bytes
rounds 9
ask "converged"
step F verify "$INV"
python3 -c "import json; r=json.load(open('$FACTS')); v=r.get('verify') or {}; print('load', json.dumps(v.get('load', {}).get('gpus'))); print('batches', (v.get('load') or {}).get('batches')); print('bandwidth', json.dumps(v.get('bandwidth')))" >> "$T" 2>&1
step F health "$INV" --set 'expect_gpus=1x H200'
grep -E "^median|no-op apply command" "$T"
