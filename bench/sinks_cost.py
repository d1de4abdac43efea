"""The sinks' CPU a host (issue 46 item 4): what `Sinks.host` (the facts record, the run log, the history store) and
`Sinks.end` cost the controller for each host of a converged apply. Figures, never assertions.

    python3 bench/sinks_cost.py [--hosts 100] [--repeats 5] [--address 127.0.41.250] [--port 24100]
                                [--reports FILE]   # reuse reports captured before (--save FILE writes them)

The reports are real: a converged `fleet apply` of the four recorded lab hosts (bench/_replay.py answering what the
real lab hosts answered, bench/controller.py's Lab) is run once with Sinks.host wrapped, and what each host handed
its sinks is kept. Each of --hosts simulated hosts takes one of them in turn under its own name (its record's host
and hostname are its own), so no two hosts' records are equal. A repeat is, in a fresh directory: the hosts' last
records written as the bench's controller writes them; a first apply into an empty store ("first"), then a second
one with a later gathered_at ("second": every host converged, its store row unchanged). Each host's last record is
read (fleet.record.store.load) before its report, as the engine's last_facts does, outside the timing. The figure
is the CPU (time.process_time) of all the hosts' Sinks.host calls and of Sinks.end, divided by --hosts; the minimum
over --repeats. Thread CPU only: the machine is shared, so wall time means nothing here.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_WRAPPER = """
import json, os, sys
from fleet.record import sinks
_host = sinks.Sinks.host
def host(self, run, name, report):
    with open(os.environ["FLEET_BENCH_CAPTURE"], "a") as out:
        out.write(json.dumps({"command": run.command, "name": name, "report": report}, default=str) + "\\n")
    return _host(self, run, name, report)
sinks.Sinks.host = host
from fleet.cli import main
sys.exit(main(sys.argv[1:]))
"""


def capture(address: str, port: int) -> list[dict]:
    """Each recorded lab host's report of a converged `fleet apply`, as its sinks were handed it."""
    sys.path.insert(0, str(ROOT / "bench"))
    from controller import Lab

    with tempfile.TemporaryDirectory(prefix="fleet-bench-sinks-") as tmp:
        lab = Lab(Path(tmp), 4, address, port)
        out = Path(tmp) / "reports.jsonl"
        wrapper = Path(tmp) / "wrapper.py"
        wrapper.write_text(_WRAPPER)
        env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", XDG_STATE_HOME=tmp, FLEET_BENCH_CAPTURE=str(out))
        try:
            proc = subprocess.run([sys.executable, str(wrapper), "apply", str(lab.inventory)], env=env,
                                  capture_output=True, text=True)
        finally:
            lab.stop()
        if proc.returncode != 0:
            raise SystemExit(f"the replayed apply exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        return [json.loads(line) for line in out.read_text().splitlines()]


def reports_for(captured: list[dict], hosts: int, gathered_at: str) -> list[tuple[str, dict]]:
    out = []
    for i in range(hosts):
        report = copy.deepcopy(captured[i % len(captured)]["report"])
        name = f"h{i:04d}"
        record = report.get("record")
        if isinstance(record, dict):
            record["host"] = name
            record["gathered_at"] = gathered_at
            if isinstance(record.get("system"), dict):
                record["system"]["hostname"] = name
        out.append((name, report))
    return out


def one_repeat(captured: list[dict], hosts: int) -> dict[str, float]:
    from fleet.record import store as records
    from fleet.record.sinks import Run, Sinks, for_run

    figures = {}
    with tempfile.TemporaryDirectory(prefix="fleet-bench-sinks-") as tmp:
        facts = Path(tmp) / "facts"
        facts.mkdir()
        for name, report in reports_for(captured, hosts, "2026-11-29T07:00:00Z"):
            (facts / f"{name}.json").write_text(json.dumps(report["record"]))   # as bench/controller.py's Lab
        os.environ["XDG_STATE_HOME"] = tmp
        for phase, gathered in (("first", "2026-11-29T08:00:00Z"), ("second", "2026-11-29T08:05:00Z")):
            reports = reports_for(captured, hosts, gathered)
            run = Run(command="apply", inventory=None, argv=("fleet", "apply", "bench.yaml"), facts_dir=facts)
            sinks = Sinks(for_run(run))
            sinks.begin(run)
            spent = 0.0
            for name, report in reports:
                records.load(facts / f"{name}.json")    # the engine's last_facts, outside the timing
                started = time.process_time()
                sinks.host(run, name, report)
                spent += time.process_time() - started
            started = time.process_time()
            sinks.end(run, 0)
            ended = time.process_time() - started
            if sinks.warnings or sinks.failed:
                raise SystemExit(f"the sinks warned: {sinks.warnings[:3]} {sinks.failed}")
            figures[f"{phase} host"] = spent / hosts * 1000
            figures[f"{phase} end"] = ended / hosts * 1000
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--address", default="127.0.41.250")
    parser.add_argument("--port", type=int, default=24100)
    parser.add_argument("--reports", type=Path, help="reports captured before (--save), instead of a replayed apply")
    parser.add_argument("--save", type=Path, help="write the captured reports here")
    args = parser.parse_args()
    if args.reports:
        captured = [json.loads(line) for line in args.reports.read_text().splitlines()]
    else:
        captured = capture(args.address, args.port)
        if args.save:
            args.save.write_text("".join(json.dumps(item) + "\n" for item in captured))
    runs = [one_repeat(captured, args.hosts) for _ in range(args.repeats)]
    print(f"sinks CPU-ms a host, {args.hosts} hosts, min of {args.repeats} (all: min..max)")
    for key in runs[0]:
        values = [run[key] for run in runs]
        print(f"  {key:<12} {min(values):7.3f}   ({min(values):.3f}..{max(values):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
