"""A pod's time from its SSH line to "verify passed", split where fleet's OWN time goes (issue 50, item 1).

    FLEET_TEST_LAB_NET=127.0.28 python3 bench/bootstrap_time.py             # 3 rounds, each on a fresh pod-570
    FLEET_TEST_LAB_NET=127.0.28 python3 bench/bootstrap_time.py --rounds 1 --profile pod-580

It takes the test lab of FLEET_TEST_LAB_NET (its session lock: no test session on that net meanwhile; the test lab's
sizes, 1/1000 without a rate limit, so the downloads cost next to nothing and what is left is fleet's own time and
apt/dpkg/pip's local work), resets one pod, and runs `fleet bootstrap` in this process as the CLI does, with the
controller's clock on every step:

  - bootstrap's phases (connect, health, facts, apply, verify) as its summary shows them;
  - every remote command: when it started and ended, its bytes of script, its sections (`@@begin NAME` markers in
    its output) or, for an apply, the tasks it ran; the gaps between commands are the controller's own time;
  - every task of the apply: its chain, started/ended on the host (the engine's JSON), so where the apply's time
    goes is read per chain;
  - the verify program's own run, out of the host's verify record (timed GPU measurements are verify's, not fleet's:
    the lab's stand-in torch measures nothing with verify_perf off).

Figures, not assertions. bench/README.md keeps them with the command line ("Time to a verified pod").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
os.environ.setdefault("FLEET_TEST_LAB_NET", "127.0.28")

_BEGIN = re.compile(r"^@@fleet:begin (\S+)@@", re.M)


class Clock:
    """Every remote command and progress line of one bootstrap, timed from its start."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.commands: list[dict] = []
        self.steps: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def progress(self, host: str, message: str) -> None:
        if not message.startswith(" "):
            with self.lock:
                self.steps.append((self.now(), message[:110]))


def instrument(clock: Clock):
    """Connection.run timed (wall, on the controller); returns the undo."""
    from fleet.connection import base

    original = base.Connection.run

    def run(self, script, **kwargs):
        started = clock.now()
        result = original(self, script, **kwargs)
        names = _BEGIN.findall(result.stdout)
        with clock.lock:
            clock.commands.append({"start": started, "end": clock.now(), "bytes": len(script),
                                   "sections": names, "first": script.strip().splitlines()[0][:60] if script.strip()
                                   else ""})
        return result

    base.Connection.run = run
    return lambda: setattr(base.Connection, "run", original)


def pods_inventory(lab, home: Path) -> Path:
    """The lab's variables (its mirror, its keyring pins) as the HOME's default inventory, no pod in it."""
    import yaml

    doc = yaml.safe_load(lab.inventory_path.read_text())
    path = home / ".config" / "fleet" / "pods.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    thor = doc["hosts"]["thor"]
    path.write_text(f"keyring_pins: {doc['keyring_pins']}\n" + yaml.safe_dump({"vars": doc["vars"]}, sort_keys=False)
                    + f"hosts:\n  thor:\n    address: {thor['address']}\n    lab: {{profile: thor}}\n")
    return path


def warm_snapshot(lab, profile: str, kept: Path) -> None:
    """The pod with what a provider's image or an earlier download left: the CUDA toolkit (and compat where it is
    needed) and torch in the venv, nothing of fleet's own (no hooks, no CUTLASS, no verify, no helper programs):
    as the lent H200 was (torch in /opt/torch/.venv, CUTLASS from a local repository)."""
    import io

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment
    from fleet_lab import control

    lab.reset([profile])
    out = io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=out, width=200))
    code = main(["apply", str(lab.inventory_path), "--limit", profile, "--roles", "cuda_toolkit,cuda_compat,torch",
                 "-q"], env)
    if code != 0:
        raise SystemExit(f"the warm pod's apply failed ({code}):\n{out.getvalue()[-3000:]}")
    with lab.connect(profile) as conn:   # nothing of fleet's own stays: its programs, lock, records
        conn.run("rm -rf /var/lib/fleet")
    control.snapshot(lab.inventory_path, [profile], kept, lab.root)


def one(lab, profile: str, work: Path, kept: Path | None = None) -> dict:
    from fleet_lab import paths
    from fleet.workflows.bootstrap import bootstrap
    from fleet.workflows.ssh_line import parse_target

    home = work / "home"
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"))
    os.environ.pop("SSH_AUTH_SOCK", None)
    inventory = pods_inventory(lab, home)
    if kept is None:
        lab.reset([profile])
    else:
        from fleet_lab import control

        control.restore(lab.inventory_path, [profile], kept, lab.root)
    address = lab.inventory.hosts[profile].address
    clock = Clock()
    undo = instrument(clock)
    try:
        target = parse_target(f"ssh root@{address} -p 22 -i {paths.lab_key(lab.root)}")
        clock.t0 = time.monotonic()
        result = bootstrap(target, inventory_path=inventory, progress=clock.progress)
    finally:
        undo()
    tasks = []
    for t in (result.report.tasks if result.report else ()):
        doc = t.to_json()
        if doc.get("started") is not None:
            tasks.append((doc.get("chain") or doc["role"], doc["role"], doc["task"], doc["status"], doc["started"],
                          doc["ended"]))
    verify = (result.facts or {}).get("verify") or {}
    record = home / ".config" / "fleet" / "facts" / f"{result.name}.json"
    return {"record": record.read_text() if record.is_file() else None, "ok": result.ok, "error": result.error, "seconds": result.seconds, "phases": dict(result.phases),
            "commands": clock.commands, "steps": clock.steps, "tasks": tasks,
            "changed": len(result.changed), "verify_seconds": verify.get("seconds"),
            "report_phases": dict(result.report.phases) if result.report else {}}


def show(run: dict) -> None:
    print(f"  total {run['seconds']:.2f} s  ok={run['ok']}  changed={run['changed']}  "
          f"remote commands={len(run['commands'])}  {run['error'] or ''}")
    print("  phases: " + "  ".join(f"{k} {v:.2f}" for k, v in run["phases"].items())
          + "   (converge: " + "  ".join(f"{k} {v:.2f}" for k, v in run["report_phases"].items()) + ")")
    last = 0.0
    for c in run["commands"]:
        gap = c["start"] - last
        what = ",".join(s for s in c["sections"] if not s.startswith(("fact.", "facts.")))[:90] or c["first"]
        facts = sum(1 for s in c["sections"] if s.startswith(("fact.", "facts.")))
        what = (f"{facts} fact sections; " if facts else "") + what
        print(f"    {c['start']:6.2f}-{c['end']:6.2f} {c['end'] - c['start']:5.2f} s  (+{gap:4.2f} before) "
              f"{c['bytes']:6d} B  {what}")
        last = c["end"]
    if run["tasks"]:
        print("  apply's tasks (seconds from the apply's start on the host):")
        for chain, role, task, status, s, e in sorted(run["tasks"], key=lambda t: t[4]):
            print(f"    {s:6.2f}-{e:6.2f} {e - s:5.2f} s  {chain:<10} {role}: {task[:50]} ({status})")
    if run["verify_seconds"] is not None:
        print(f"  verify program's own run: {run['verify_seconds']} s")


def script(lab, args) -> int:
    """bench/h200/bootstrap_time.sh against the lab's pod, as the lead runs it on the H200."""
    import subprocess

    from fleet_lab import paths

    out = Path(args.script)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("rounds.jsonl", "transcript.txt"):
        (out / name).unlink(missing_ok=True)
    lab.reset([args.profile])
    address = lab.inventory.hosts[args.profile].address
    env = {**os.environ, "OUT": str(out), "FLEET_BOOTSTRAP_PY": sys.executable, "FLEET_BOOTSTRAP_WARMUP": "1",
           "FLEET_BOOTSTRAP_PERF": "off", "FLEET_BOOTSTRAP_LINE": f"ssh root@{address} -p 22 -i {paths.lab_key(lab.root)}",
           "FLEET_BOOTSTRAP_SETS": f"--keyring-pins {lab.root / 'keyring.sha256'} --set verify_perf=false"}
    done = subprocess.run(["bash", "bench/h200/bootstrap_time.sh", str(args.rounds), args.before], cwd=BENCH.parent,
                          env=env)
    print((out / "transcript.txt").read_text())
    return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", default="pod-570", help="the lab host to bootstrap (reset before each round)")
    parser.add_argument("--warm", action="store_true",
                        help="nothing to download: each round starts from the pod with the toolkit and torch already "
                             "installed, nothing of fleet's (see warm_snapshot)")
    parser.add_argument("--script", default=None, metavar="OUT",
                        help="run bench/h200/bootstrap_time.sh on the lab's pod instead (this tree and --before, "
                             "--rounds each, verify_perf off), its rounds.jsonl and transcript.txt into OUT")
    parser.add_argument("--before", default="7a5130c", help="with --script: the commit to compare with")
    parser.add_argument("--facts-out", default=None, metavar="FILE",
                        help="the last round's facts record (as bootstrap recorded it), for tests/data")
    parser.add_argument("--json", default=None, metavar="FILE", help="every round's figures, for the record")
    args = parser.parse_args()
    from fleet_lab import testing

    with tempfile.TemporaryDirectory(prefix="fleet-bench-bootstrap-") as tmp:
        (Path(tmp) / "lab").mkdir()
        lab = testing.start_test_lab(Path(tmp) / "lab")
        if args.script:
            try:
                return script(lab, args)
            finally:
                testing.stop_test_lab(lab)
        runs = []
        try:
            kept = None
            if args.warm:
                kept = Path(tmp) / "kept"
                warm_snapshot(lab, args.profile, kept)
            for i in range(args.rounds):
                work = Path(tmp) / f"round-{i}"
                work.mkdir()
                run = one(lab, args.profile, work, kept)
                print(f"round {i + 1}:")
                show(run)
                runs.append(run)
        finally:
            testing.stop_test_lab(lab)
    print(f"median of {len(runs)}: total {statistics.median(r['seconds'] for r in runs):.2f} s; "
          + "  ".join(f"{k} {statistics.median(r['phases'].get(k, 0) for r in runs):.2f}"
                      for k in runs[0]["phases"]))
    if args.facts_out and runs[-1]["record"]:
        Path(args.facts_out).write_text(runs[-1]["record"])
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
