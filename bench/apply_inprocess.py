"""A converged `fleet apply`'s own work a host: the whole command in this process, one host at a time (--forks 1),
each remote command answered from the recording without SSH. What is left is fleet's: the probe's script, its parse,
deciding and rendering, the checks read, the sinks (facts records, history store, run log), the report.

    python3 bench/apply_inprocess.py [--hosts 300] [--rounds 5] [--profile OUT.prof] [--loose]

The hosts take the recorded lab profiles in turn (bench/data/replay-lab.*, as bench/controller.py's Lab does: each
host has its profile's last facts record, so the probe fleet plans is the one recorded). Each round runs the apply
and then `fleet run -- true` (fleet's side of a command with no SSH: ~0.3 ms), and prints the process CPU
(time.process_time) a host; the median of the applies is the figure. A warm-up apply comes first (the history
store then holds every host, as a converged fleet's does). Issue 46 item 4 asks apply at 1,000 hosts to cost at most
2x `run -- true` over SSH (bench/controller.py); this is the part of it that is fleet's own work, without SSH's and
without the contention of 1,000 threads (which multiplies it ~1.3-1.7x there).

A command the recording does not hold fails the run (the controller sends something new: record again,
bench/README.md), unless --loose: then it is answered with its host's recorded command of the same kind (the probe
of an apply, of `fleet facts`, or a short command), to try a change to what fleet sends before recording again. The
answers are then the recorded tree's, so the apply still finds every host converged.

--profile: the first measured apply under cProfile (every thread), written for pstats; cProfile inflates pure-Python
code several times, so compare its shares, not its times.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "bench" / "data"
DROPPED = {"address", "port", "key", "known_hosts"}


def kind(stdin: str) -> str:
    """A recorded command's kind, by its script: "short", "apply" (a probe with checks) or "facts"."""
    raw = base64.b64decode(stdin or "")
    text = zlib.decompress(raw, 31).decode() if raw[:2] == b"\x1f\x8b" else raw.decode(errors="replace")
    return "short" if len(text) < 4000 else ("apply" if "check." in text else "facts")


def fleet_dir(workdir: Path, n: int) -> tuple[Path, list[str], dict]:
    """An inventory of n hosts of the recorded profiles in turn, each with its profile's facts record."""
    recorded = yaml.safe_load((DATA / "replay-lab.yaml").read_text())
    profiles = list(recorded["hosts"])
    facts = workdir / "facts"
    facts.mkdir()
    hosts = {}
    for i in range(n):
        name = profiles[i % len(profiles)]
        record = json.loads((DATA / "replay-lab-facts" / f"{name}.json").read_text())
        record["host"] = f"h{i:04d}"
        (facts / f"h{i:04d}.json").write_text(json.dumps(record))
        entry = {k: v for k, v in recorded["hosts"][name].items() if k not in DROPPED}
        hosts[f"h{i:04d}"] = {"address": "127.0.0.1", "port": 30000 + i, **entry}
    inventory = {"facts_dir": str(facts), "vars": recorded.get("vars") or {}, "hosts": hosts}
    pins = DATA / "replay-lab-keyring.sha256"
    if pins.exists():
        shutil.copy(pins, workdir / "keyring.sha256")
        inventory["keyring_pins"] = str(workdir / "keyring.sha256")
    path = workdir / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path, profiles, recorded


def answering(profiles: list[str], loose: bool) -> list[str]:
    """SSHConnection answering from the recording, no SSH; -> the hosts whose command was not recorded."""
    from fleet.connection import ssh
    from fleet.connection.base import Result

    answers: dict = {}
    with gzip.open(DATA / "replay-lab.jsonl.gz", "rt") as rows:
        for line in rows:
            row = json.loads(line)
            answers[(row["host"], row["command"], row["stdin"])] = row
            answers.setdefault((row["host"], kind(row["stdin"])), row)
    unknown: list[str] = []

    def _exec(self, command, *, stdin, timeout=None, on_output=None, on_error=None):
        profile = profiles[int(self.host.name[1:]) % len(profiles)]
        row = answers.get((profile, command, stdin or "")) or (answers.get((profile, kind(stdin))) if loose else None)
        if row is None:
            unknown.append(self.host.name)
            return Result(127, "", "bench: this command was never recorded")
        for text, call in ((row["stdout"], on_output), (row["stderr"], on_error)):
            for line in text.splitlines() if call else ():
                call(line)
        return Result(row["exit"], row["stdout"], row["stderr"])

    def _open(self):
        self._fabric = object()     # what _exec's callers look for; nothing is opened

    ssh.SSHConnection.open = _open
    ssh.SSHConnection._exec = _exec
    ssh.SSHConnection.close = lambda self: None
    return unknown


def unchanged(state: Path) -> str | None:
    """Why the newest apply's run log is not a converged no-op (a host not ok, or one that changed), else None."""
    from fleet.record import runlog

    logs = sorted((state / "fleet" / "runs").glob("*-apply.jsonl"), key=lambda p: p.stat().st_mtime)
    hosts = [doc for doc in runlog.read(logs[-1]) if "host" in doc] if logs else []
    for doc in hosts:
        if doc.get("status") != "ok" or doc.get("changed"):
            return f"{doc.get('host')}: {doc.get('status')}, changed {doc.get('changed')}"
    return None if hosts else "no run log"


def run(argv: list[str], n: int) -> tuple[int, float]:
    """One fleet command in this process -> (exit, process CPU-ms a host); its output is dropped."""
    from fleet.cli import main

    started = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main(argv) or 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, (time.process_time() - started) / n * 1000


@contextlib.contextmanager
def profiled(out: Path | None):
    """cProfile over this thread and every thread started meanwhile, summed into `out`."""
    if out is None:
        yield
        return
    import cProfile
    import pstats

    profiles = [cProfile.Profile()]
    plain = threading.Thread.run

    def run_profiled(self):
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.runcall(plain, self)

    threading.Thread.run = run_profiled
    profiles[0].enable()
    try:
        yield
    finally:
        profiles[0].disable()
        threading.Thread.run = plain
        stats = pstats.Stats(profiles[0])
        for profile in profiles[1:]:
            with contextlib.suppress(TypeError, ValueError):   # a thread that never ran anything
                stats.add(profile)
        stats.dump_stats(str(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=Path, help="the first measured apply's cProfile, for pstats")
    parser.add_argument("--loose", action="store_true",
                        help="answer a command never recorded with its host's recorded one of the same kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-bench-inprocess-") as tmp:
        workdir = Path(tmp)
        os.environ.update(XDG_STATE_HOME=str(workdir / "state"), NO_COLOR="1")
        inventory, profiles, _ = fleet_dir(workdir, args.hosts)
        unknown = answering(profiles, args.loose)
        apply = ["apply", str(inventory), "--forks", "1"]
        true = ["run", str(inventory), "--forks", "1", "--", "true"]
        rc, warm = run(apply, args.hosts)
        if rc or unknown:
            raise SystemExit(f"the warm-up apply exited {rc}; {len(unknown)} command(s) never recorded"
                             + (" (record again, or --loose)" if unknown else ""))
        print(f"warm-up apply {warm:.2f} CPU-ms a host", flush=True)
        applies = []
        for i in range(args.rounds):
            with profiled(args.profile if i == 0 else None):
                rc, cpu = run(apply, args.hosts)
            rc_true, cpu_true = run(true, args.hosts)
            if rc or rc_true or unknown:
                raise SystemExit(f"round {i + 1}: apply exited {rc}, run -- true {rc_true}; {len(unknown)} command(s) "
                                 "never recorded")
            why = unchanged(workdir / "state")
            if why:
                raise SystemExit(f"round {i + 1}: the apply was not a converged no-op ({why}): nothing to measure")
            applies.append(cpu)
            print(f"round {i + 1}: apply {cpu:.2f}  run -- true {cpu_true:.2f} CPU-ms a host", flush=True)
        print(f"median of {len(applies)}: apply {statistics.median(applies):.2f} CPU-ms a host "
              f"({min(applies):.2f}-{max(applies):.2f}), {args.hosts} hosts, one at a time, no SSH")
    return 0


if __name__ == "__main__":
    sys.exit(main())
