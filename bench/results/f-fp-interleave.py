"""Before/after on the lab, interleaved: `python f-fp-interleave.py ROUNDS apply|facts BEFORE_TREE AFTER_TREE INVENTORY`
(each tree a checkout holding this branch's bench/sections.py; FLEET_LAB_ROOT as the lab was started)."""
import subprocess, re, statistics, sys, collections, os
env = dict(os.environ)
py = sys.executable
rounds, kind, inventory = int(sys.argv[1]), sys.argv[2], sys.argv[5]
trees = {"before": sys.argv[3], "after": sys.argv[4]}
data = {t: collections.defaultdict(list) for t in trees}
row = re.compile(r"^\s*([\d.]+)\s+(\d+)\s+(\S+)$", re.M)
for i in range(rounds + 1):
    for t, tree in trees.items():
        out = subprocess.run([py, "bench/sections.py", kind, inventory, "--limit", "pod-580"], cwd=tree,
                             capture_output=True, text=True, env=env, timeout=120)
        if i == 0:
            continue   # warm-up (each tree's first writes the record the next reads)
        for ms, n, name in row.findall(out.stderr):
            data[t][name].append(float(ms))
        if "passed (reused)" not in out.stdout + out.stderr and kind == "apply":
            print("NOT REUSED", t, out.stdout[-300:], file=sys.stderr)
names = ["WHOLE-COMMAND", "facts.shells", "facts.verify_fingerprint", "check.verify.0", "facts.fabric",
         "end:facts.shells", "end:facts.verify_fingerprint", "end:check.verify.0"]
print(f"{kind}: medians of {rounds} interleaved rounds, ms (lab pod-580, converged, programs installed)")
print(f"{'section':34s} {'before e611fe2':>15s} {'after':>8s}")
for n in names:
    b, a = data["before"].get(n), data["after"].get(n)
    f = lambda v: f"{statistics.median(v):8.1f}" if v else "       -"
    print(f"{n:34s} {f(b):>15s} {f(a):>8s}")
tails = {t: [e - s for e, s in zip(data[t]["end:facts.verify_fingerprint"], data[t]["end:facts.shells"])] for t in trees}
print(f"{'fingerprint end - shells end':34s} {statistics.median(tails['before']):15.1f} {statistics.median(tails['after']):8.1f}")
if data["before"].get("end:check.verify.0"):
    g = {t: [e - s for e, s in zip(data[t]["end:check.verify.0"], data[t]["end:facts.shells"])] for t in trees}
    print(f"{'gate end - shells end':34s} {statistics.median(g['before']):15.1f} {statistics.median(g['after']):8.1f}")
