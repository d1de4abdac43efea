"""The controller's own CPU for one converged host's probe, in process and on real answers (issue 46, item 4):

    python3 bench/probe_cpu.py [--rounds 20] [--repeats 5] [--dump FILE]

No SSH and no root: each of the 4 lab hosts recorded in bench/data (replay-lab.yaml's inventory, their last records
in replay-lab-facts/, what each answered in replay-lab.jsonl.gz) is observed (fleet.engine.observe: the probe's
script built, sent, its answer split, checked for what it did not see, parsed into the facts record, the checks
read) through a connection that answers each command with what the real host answered to exactly that command
(bench/_replay.py's key: a command never recorded stops the bench). It prints CPU (time.process_time) per host,
the minimum over --repeats runs of --rounds rounds, in all and by phase; decide and render (observe's guess from
the last record, the checks' rendering) are shown apart, as the harness's own lookup is.

--dump FILE writes what observe gave (each host's facts, less the times, and its checks' answers) as JSON: run it
from two checkouts (PYTHONPATH=THAT_TREE python3 THAT_TREE/bench/probe_cpu.py --dump B) and compare the files to
show a change gives the same facts and checks. Another engineer's load inflates every figure; compare interleaved
runs, never one against a figure from another day.
"""

from __future__ import annotations

import argparse
import collections
import gc
import gzip
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
sys.path.insert(0, str(ROOT / "bench"))

from _replay import key  # noqa: E402

from fleet.connection.base import Connection, Result  # noqa: E402
from fleet.engine import session  # noqa: E402
from fleet.engine.observe import last_facts, observe  # noqa: E402
from fleet.engine.setup import Setup  # noqa: E402
from fleet.inventory import load_inventory  # noqa: E402

# (module, function): each one's CPU is summed where it is called through its module (as observe calls them)
PHASES = [("fleet.engine.probe", "script"), ("fleet.engine.probe", "run_sections"), ("fleet.sections", "split_sections"),
          ("fleet.engine.probe", "unobserved"), ("fleet.engine.probe", "parse"), ("fleet.engine.probe", "said"),
          ("fleet.engine.observe", "read_check")]
APART = [("fleet.engine.observe", "decide_tasks"), ("fleet.engine.observe", "check_sections"),
         ("fleet.engine.observe", "_decide"), ("__main__", "Replay._exec")]


class Replay(Connection):
    """Answers each command with what the recorded host answered to it."""

    answers: dict[str, dict[str, tuple[int, str, str]]] = {}

    def _exec(self, command, *, stdin, timeout, on_output, on_error=None):
        found = self.answers[self.host.name].get(key(command, stdin or ""))
        if found is None:
            raise SystemExit(f"{self.host.name}: a command that was never recorded (record again: "
                             "bench/record_replay.py)")
        return Result(*found)


def hosts(work: Path):
    """The recorded lab's inventory, its hosts' last records in place: (hosts, each host's Setup, its last record)."""
    recorded = yaml.safe_load((DATA / "replay-lab.yaml").read_text())
    (work / "facts").mkdir()
    entries = {}
    for name, entry in recorded["hosts"].items():
        (work / "facts" / f"{name}.json").write_text((DATA / "replay-lab-facts" / f"{name}.json").read_text())
        entries[name] = {"address": "192.0.2.1", **{k: v for k, v in entry.items()
                                                    if k not in ("address", "port", "key", "lab")}}
    inventory = {"facts_dir": str(work / "facts"), "vars": recorded.get("vars") or {}, "hosts": entries}
    if (DATA / "replay-lab-keyring.sha256").exists():
        inventory["keyring_pins"] = str(DATA / "replay-lab-keyring.sha256")
    (work / "inventory.yaml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    loaded = load_inventory(str(work / "inventory.yaml"))
    selected = loaded.select(None)
    by_host = session.roles_of(selected, loaded.roles_path)
    setups = {h.name: Setup(by_host[h.name], facts_dir=loaded.facts_dir, record_facts=False) for h in selected}
    return selected, setups, {h.name: last_facts(setups[h.name], h) for h in selected}


def timed(spent: collections.Counter, table):
    for module_name, attr in table:
        module = sys.modules["__main__"] if module_name == "__main__" else importlib.import_module(module_name)
        owner, _, leaf = attr.rpartition(".")
        target = getattr(module, owner) if owner else module
        inner = getattr(target, leaf)

        def wrapped(*args, _inner=inner, _name=attr, **kwargs):
            started = time.process_time()
            try:
                return _inner(*args, **kwargs)
            finally:
                spent[_name] += time.process_time() - started
        setattr(target, leaf, wrapped)


def dumped(observed) -> dict:
    facts = {k: v for k, v in observed.facts.items() if k != "gathered_at"}
    if isinstance(facts.get("verify"), dict):
        facts["verify"] = {k: v for k, v in facts["verify"].items() if k != "checked_at"}
    return {"facts": facts, "checks": {k: repr(v) for k, v in observed.checks.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dump", type=Path, help="write each host's facts and checks here (JSON)")
    args = parser.parse_args()
    for line in gzip.open(DATA / "replay-lab.jsonl.gz", "rt"):
        r = json.loads(line)
        Replay.answers.setdefault(r["host"], {})[key(r["command"], r["stdin"])] = (r["exit"], r["stdout"], r["stderr"])
    with tempfile.TemporaryDirectory(prefix="fleet-probe-cpu-") as work:
        selected, setups, lasts = hosts(Path(work))

        def once():
            return {h.name: observe(Replay(h), h, setups[h.name], lasts[h.name]) for h in selected}

        first = once()
        if args.dump:
            args.dump.write_text(json.dumps({name: dumped(o) for name, o in first.items()}, indent=1, sort_keys=True,
                                            default=repr))
        spent: collections.Counter = collections.Counter()
        timed(spent, PHASES + APART)
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)   # as fleet/connection/parallel.py while hosts run
        best = None
        for _ in range(args.repeats):
            spent.clear()
            started = time.process_time()
            for _ in range(args.rounds):
                once()
            total = time.process_time() - started
            if best is None or total < best[0]:
                best = (total, dict(spent))
        per = args.rounds * len(selected) / 1000   # seconds -> ms a host
        total, phases = best
        apart = sum(phases[attr] for _, attr in APART)
        print(f"observe: {total / per:.3f} CPU-ms a host; outside decide/render and the harness's lookup: "
              f"{(total - apart) / per:.3f} (min of {args.repeats} x {args.rounds} rounds of {len(selected)} hosts)")
        for _, attr in PHASES + APART:
            print(f"  {attr:24s} {phases[attr] / per:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
