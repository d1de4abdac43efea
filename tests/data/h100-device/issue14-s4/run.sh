# Issue 14, session 4: the no-op after the probe and controller work (shared shell trace, pyvenv.cfg, cached role
# compiles, libyaml), on the lent H100 over real SSH (the carried sshd), and where the probe's time goes ON the
# real host, section by section (bench/sections.py), with the real nvidia-smi's own cost.
# Run from the project root on the device machine: FLEET_COMMIT=<hash> bash .../run.sh; writes under $OUT
# (7 files: the device returns at most 8).
set -u
export PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE     # as pip leaves fleet installed: bytecode compiled once
T=$OUT/transcript.txt
source .gpu/env.sh > "$OUT/setup.txt" 2>&1 || { cat "$OUT/setup.txt"; exit 1; }
python3 -m compileall -q fleet >/dev/null 2>&1
INV=$GPU_INV; FACTS=/tmp/gpu-inventory/facts/h100.json
step() { printf '\n$ %s\n' "$*" >> "$T"; "$@" >> "$T" 2>&1; printf '[exit %s]\n' "$?" >> "$T"; }
note() { printf '\n# %s\n' "$*" >> "$T"; }
F() { python3 -m fleet "$@"; }
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); fleet at ${FLEET_COMMIT:-?}"
step F apply "$INV" --accept-new-host-keys
note "second apply: must change nothing"
F apply "$INV" --json > "$OUT/apply-noop.json" 2>> "$T"; printf '[exit %s]\n' "$?" >> "$T"
cp "$FACTS" "$OUT/facts-after-apply.json"
note "timings: medians of 5 runs each, in one process tree (fleet run -- true is the floor)"
python3 tests/data/h100-device/issue14/timings.py "$INV" > "$OUT/timings.json" 2>> "$T"; cat "$OUT/timings.json" >> "$T"
note "the no-op's probe section by section, timed on the host (3 no-op applies)"
for i in 1 2 3; do echo "== run $i"; python3 bench/sections.py apply "$INV" -q 2>&1 > /dev/null; done > "$OUT/sections.txt"
cat "$OUT/sections.txt" >> "$T"
note "the real nvidia-smi's own cost: 10 calls of each form the probe makes, wall ms"
q=index,name,driver_version,compute_cap,memory.total,memory.used,uuid,pci.bus_id
for form in "nvidia-smi --query-gpu=$q --format=csv,noheader,nounits" "nvidia-smi"; do
  ms=(); for i in $(seq 10); do a=$EPOCHREALTIME; $form > /dev/null 2>&1; b=$EPOCHREALTIME; ms+=($(( (${b/./} - ${a/./}) / 1000 ))); done
  note "$form: ${ms[*]}"
done
note "fleet verify: verify runs again, whatever its fingerprint says"
step F verify "$INV"
cp "$FACTS" "$OUT/facts-after-verify.json"
