"""Medians of 5 runs of `fleet run -- true` (the floor), `fleet facts` and a no-op `fleet apply` on one inventory,
each a child process of this one; prints one JSON document with the ratios."""
import json
import statistics
import subprocess
import sys
import time

inventory = sys.argv[1]
commands = {"run_true": ["run", inventory, "--", "true"], "facts": ["facts", inventory],
            "noop_apply": ["apply", inventory]}
out = {}
for name, argv in commands.items():
    times = []
    for _ in range(5):
        start = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "fleet", *argv], capture_output=True, text=True)
        times.append(time.monotonic() - start)
        if res.returncode != 0:
            out.setdefault("errors", []).append({name: res.stdout[-500:] + res.stderr[-500:]})
    out[name] = {"median_s": round(statistics.median(times), 3), "runs_s": [round(t, 3) for t in times]}
out["noop_over_floor"] = round(out["noop_apply"]["median_s"] / out["run_true"]["median_s"], 2)
out["facts_over_floor"] = round(out["facts"]["median_s"] / out["run_true"]["median_s"], 2)
print(json.dumps(out, indent=1))
