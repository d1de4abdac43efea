#!/usr/bin/env bash
# GPU health (issue 36) on the lent H200, for the lead's device run. From the project root there, with .gpu carried
# (../shared/tools/real-gpu-prep.sh .gpu here first):
#
#   bash bench/h200/health.sh
#
# Writes three files into $OUT, which tests/unit/test_h200_health_records.py loads from tests/data/h200-device/health/:
#   health.json  `fleet health --json` of the real GPU through fleet's SSH connection (expect_gpus "1x H200"): the
#                verdict, its findings and facts.health (every field as the driver answered it, the kernel log's state)
#   load.json    verify's own under-load and bandwidth steps (fleet/remote/verify/perf.py) on the real GPU with the
#                platform table's H200 row: the link and clock-event reasons sampled while it worked, pinned 1 GiB
#                host-to-device / device-to-host and device-to-device copies against the floors, each step's seconds
#   cost.json    bench/health_cost.py: the no-op probe's remote command with and without the health sources (main's),
#                each health source alone, fleet health's command (medians of 15, interleaved); and the wall time of
#                three whole `fleet health` runs (connect + command + verdict), the health check's time with the
#                bandwidths (target < 10 s)
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
cd "$(dirname "$0")/../.."
source .gpu/env.sh >/dev/null 2>&1 || { echo "source .gpu/env.sh failed: run ../shared/tools/real-gpu-prep.sh .gpu first" >&2; exit 1; }
PY=/opt/torch/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3)

# 1. the verdict of the real GPU, three times (the first kept): the whole check's wall time
walls=()
for i in 1 2 3; do
  start=$(date +%s%N)
  fleet health "$GPU_INV" --accept-new-host-keys --set 'expect_gpus=1x H200' --json > /tmp/health-$i.json 2>/tmp/health-$i.err
  rc=$?
  walls+=("$(( $(date +%s%N) - start )) $rc")
done
cp /tmp/health-1.json "$OUT/health.json"
cat /tmp/health-1.err >&2

# 2. verify's under-load and bandwidth steps, as the verify role runs them, on the real GPU
PYTHONPATH="$PWD" "$PY" - > "$OUT/load.json" <<'PYEOF'
import json, time
from fleet.knowledge.platforms import platform
from fleet.remote.verify import perf
from fleet.remote.verify.config import Run
rows = [p.as_dict() for p in platform("x86_64-dgpu").perf]
v = Run({"perf": True, "perf_table": rows, "memory_share": 0.1})
seconds = {}
t = time.perf_counter()
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
seconds["torch_import_and_cuda_init"] = time.perf_counter() - t
name = torch.cuda.get_device_name(0)
for step, call in (("bandwidth", lambda: perf.bandwidth(v, torch, name)), ("under_load", lambda: perf.under_load(v, torch)),
                   ("perf", lambda: perf.perf(v, torch, name))):
    t = time.perf_counter()
    try:
        call()
    except Exception as exc:
        v.check(step, False, f"{type(exc).__name__}: {exc}")
    seconds[step] = round(time.perf_counter() - t, 3)
seconds["torch_import_and_cuda_init"] = round(seconds["torch_import_and_cuda_init"], 3)
print(json.dumps({"gpu": name, "row": next((r for r in rows if r["match"] in name), None),
                  "bandwidth": v.out.get("bandwidth"), "load": v.out.get("load"), "perf": v.out.get("perf"),
                  "checks": v.checks, "seconds": seconds}, indent=1))
PYEOF
echo "load.json: exit $?" >&2

# 3. the probe's cost with and without the health sources, and the whole check's wall times
python3 bench/health_cost.py --inventory "$GPU_INV" --limit h100 --rounds 15 --json /tmp/cost.json >&2
python3 - "$OUT/cost.json" "${walls[@]}" <<'PYEOF'
import json, sys
doc = json.load(open("/tmp/cost.json"))
doc["fleet_health_runs"] = [{"wall_s": round(int(w.split()[0]) / 1e9, 3), "exit": int(w.split()[1])}
                            for w in sys.argv[2:]]
json.dump(doc, open(sys.argv[1], "w"), indent=2)
PYEOF
ls -l "$OUT"
