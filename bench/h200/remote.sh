#!/usr/bin/env bash
# Issue 34 on the lent H200: how long a converged host's probe takes ON the host, section by section, and the no-op /
# facts / `run -- true` rounds.
#
#   run from the project root on the H200, with .gpu carried (../shared/tools/real-gpu-prep.sh .gpu):
#   bash bench/h200/remote.sh
#
# 1. converge (`fleet apply`), then the no-op once more (in state, one command);
# 2. bench/sections.py: 5 no-op applies and 5 `fleet facts`, every section timed by the host itself ($EPOCHREALTIME
#    around each framed section, the WHOLE-COMMAND from the script's first line to its last): median ms per section;
# 3. each nvidia-smi call the probe makes, started alone on the host 5 times (median ms), and all of them at once
#    as the probe starts them (what they cost together on the driver); and narrower -q -x candidates, timed, with the
#    fields each holds (data for a next step, nothing reads them yet);
# 4. 9 interleaved rounds of the no-op apply, `fleet facts` and `fleet run -- true` (end to end, with SSH), medians;
# 5. the no-op's bytes (lib.sh record_bytes), every kind of shell asked, a forced `fleet verify`, `fleet health`.
#
# Writes 7 files under $OUT: transcript.txt (every step, the medians), setup.txt (lib.sh's), timings.txt (the rounds,
# timings-compiled.txt the same with fleet's bytecode compiled,
# one "<what> <seconds>" line each), sections-apply.txt and sections-facts.txt (bench/sections.py's table),
# smi.txt ("<ms> <call>" lines). tests/unit/test_real_h200_probe_timed_on_the_host.py loads them from tests/data/h200-device/remote/.
set -u
source tests/data/h200-device/lib.sh
note "first apply (converge)"
step F apply "$INV"
note "second apply: nothing to change, one command"
step F apply "$INV"
record_bytes

for what in apply facts; do
  note "bench/sections.py --repeat 5 $what (median ms per section, timed on the host)"
  python3 bench/sections.py --repeat 5 "$what" "$INV" --accept-new-host-keys \
    > /dev/null 2> "$OUT/sections-$what.txt"
  grep -E "WHOLE-COMMAND|facts\.(shells|health_xml|fabric|verify_fingerprint)|check\.verify" "$OUT/sections-$what.txt" >> "$T"
done

note "each nvidia-smi call of the probe, alone (median of 5, ms), then all at once"
python3 - "$OUT/smi.txt" >> "$T" 2>&1 <<'PY'
import re, statistics, subprocess, sys, time
sys.path.insert(0, ".")
from fleet.facts import fabric, gpu, health
calls = {"nvidia_smi": f"nvidia-smi --query-gpu={gpu.QUERY_FULL} --format=csv,noheader,nounits",
         "fabric topo": "nvidia-smi topo -m",
         "fabric query": f"nvidia-smi --query-gpu={fabric.FABRIC_QUERY} --format=csv,noheader",
         "health query": f"nvidia-smi --query-gpu={health.FIELDS} --format=csv,noheader,nounits",
         "health remapped": f"nvidia-smi --query-remapped-rows={health.REMAP_FIELDS} --format=csv,noheader,nounits",
         "health_xml": "nvidia-smi -q -x",
         "table header (no longer asked)": "nvidia-smi"}
lines = []
for name, command in calls.items():
    times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(command, shell=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    lines.append(f"{statistics.median(times):.1f} {name}: {command[:80]}")
# what a narrower XML would hold (a later step: the recovery action, the replay counters and the versions from less
# than all of -q -x): each candidate timed alone, and which of those fields it prints
for command in ("nvidia-smi -q -x -d PCIE", "nvidia-smi -q -x -d PCIE,RESET_STATUS", "nvidia-smi -q -d PCIE"):
    times, out = [], ""
    for _ in range(5):
        start = time.perf_counter()
        out = subprocess.run(command, shell=True, capture_output=True, text=True).stdout
        times.append((time.perf_counter() - start) * 1000)
    has = [k for k in ("gpu_recovery_action", "replay_counter", "driver_version", "cuda_version", "Recovery", "Replay")
           if k in out]
    lines.append(f"{statistics.median(times):.1f} candidate {command}: holds {', '.join(has) or 'none of them'}")
for together in (list(calls)[:-1], list(calls)):
    start = time.perf_counter()
    procs = [subprocess.Popen(calls[n], shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for n in together]
    for p in procs:
        p.wait()
    lines.append(f"{(time.perf_counter() - start) * 1000:.1f} all at once: {', '.join(together)}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY

rounds 9
# Every fleet command above compiled fleet's Python again where PYTHONDONTWRITEBYTECODE is set (as in this machine's
# shells, and the earlier H200 runs): an installed fleet has its bytecode. The same rounds with it compiled.
note "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-unset}; the same 9 rounds with fleet's bytecode compiled"
(unset PYTHONDONTWRITEBYTECODE; python3 -m compileall -q fleet /tmp/fleet-site >/dev/null 2>&1
 export -n PYTHONDONTWRITEBYTECODE; rounds 9 timings-compiled.txt)
ask "converged"
step F verify "$INV"
python3 -c "import json; r=json.load(open('$FACTS')); v=r.get('verify') or {}; print('batches', (v.get('load') or {}).get('batches'))" >> "$T" 2>&1
step F health "$INV" --set 'expect_gpus=1x H200'
note "after verify and health: still one command"
step F apply "$INV"
grep -E "^median|no-op apply command" "$T"
