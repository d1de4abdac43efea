"""Where the fingerprint's time goes on the lent H200, inside the probe: the facts probe's script (inline: every text in
it, as on first contact) with marks at the fingerprint's steps, run by bash on the host 7 times; prints, per mark, the
median ms from the script's start. `python3 bench/h200/fp_tail.py PYTHON_ENV` from the project root on the H200 after
`source .gpu/env.sh` and a converging apply. Figures for a person (bench/README.md), never assertions."""

import re
import statistics
import subprocess
import sys

sys.path.insert(0, ".")
from fleet.engine import probe  # noqa: E402

env = sys.argv[1] if len(sys.argv) > 1 else "/opt/torch/.venv"
text = probe.script(probe.Needs.of({"python_env": env}))
mark = 'printf "@@T %s %s\\n" {} "$EPOCHREALTIME" >&9'
steps = [("fleet_shells_out=$(cat); exec </dev/null", "fp-fed", True),
         ("fleet_i=${fleet_ldk[interactive]-}", "fp-parsed", False),
         ("fleet_p4= fleet_n=0 fleet_empty=", "fp-libcuda", False),
         ("printf '%s\\n' \"$fleet_p1\" \"ld.noninteractive", "fp-digests", False)]
for anchor, name, after in steps:
    i = text.index(anchor)
    if after:
        j = text.index("\n", i) + 1
        text = text[:j] + mark.format(name) + "\n" + text[j:]
    else:
        text = text[:i] + mark.format(name) + "\n" + text[i:]
# the steps before it reads the trace: after each assignment of a part (its line's first words name it)
fp_start = text.index("fleet_stat() {")
text = text[:fp_start] + mark.format("fp-python-chosen") + "\n" + text[fp_start:]
lines, out, inside = text.split("\n"), [], False
for line in lines:
    out.append(line)
    if line.startswith("fleet_stat() {"):
        inside = True
    if inside and line.startswith("fleet_shells_out=$(cat)"):
        inside = False
    if inside and re.match(r"^(fleet_p1\+?=|fleet_h=|fleet_p3=|fleet_p5=|fleet_libcuda |fleet_recs=)", line):
        out.append(mark.format("fp:" + re.sub(r"[^A-Za-z0-9_]+", "_", line[:24])))
text = "\n".join(out)
# the pre-trace part ends where it reads the trace
read_trace = "fleet_shells_out=$(cat); exec </dev/null"
text = text.replace(read_trace, mark.format("fp-pre-done") + "\n" + read_trace, 1)
closed = "exec {fleet_bg_facts_shells}<&-; "       # the trace's collect: its mapfile has read it all
at = text.index(closed) + len(closed)
text = text[:at] + mark.format("trace-ended") + "; " + text[at:]
# marks go to fd 9 (the fingerprint's stderr goes nowhere), a file read back after each run
text = "exec 9>>/tmp/fp_tail.marks\n" + mark.format("start") + "\n" + text + "\n" + mark.format("end")
times: dict[str, list[float]] = {}
for _ in range(7):
    open("/tmp/fp_tail.marks", "w").close()
    subprocess.run(["bash", "-c", text], capture_output=True, text=True)
    err = open("/tmp/fp_tail.marks").read()
    t0 = None
    for name, at in re.findall(r"@@T (\S+) (\d+\.\d+)", err):
        t0 = t0 if t0 is not None else float(at)
        times.setdefault(name, []).append((float(at) - t0) * 1000)
for name, values in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
    print(f"{statistics.median(values):8.1f} ms  {name} (x{len(values)})")
