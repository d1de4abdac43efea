"""The controller's decide-and-render cost for one converged host, in isolation (issue 46, item 4).

    python3 bench/decide_cost.py [--iterations 200] [--repeats 5] [--profile] [--digest]

For each recorded lab host (bench/data/replay-lab-facts/*.json, with the inventory settings they were recorded with:
replay-lab.yaml and its keyring pins), what a converged apply does per host with its last record: decide_tasks (the
decisions, every role rendered) and check_sections (every enabled task's check, framed), as observe calls them.
Process CPU (time.process_time) per host, the minimum of --repeats runs of --iterations each (other engineers load
this machine: the minimum is the run least disturbed). --profile: cProfile of one host's loop, top functions.
--digest: a sha256 of every host's Decided (decisions JSON, each task's spec, resource params, check text, and the
check sections), to compare two trees byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "bench" / "data"


def hosts_and_facts(workdir: Path):
    """(setup roles by host, Host, facts) for each recorded host, loaded as the controller loads them."""
    from fleet.engine.session import roles_of
    from fleet.inventory import load_inventory

    recorded = yaml.safe_load((DATA / "replay-lab.yaml").read_text())
    hosts = {name: {"address": "192.0.2.1", **{k: v for k, v in entry.items() if k != "lab"}}
             for name, entry in recorded["hosts"].items()}
    (workdir / "keyring.sha256").write_text((DATA / "replay-lab-keyring.sha256").read_text())
    inventory = {"vars": recorded.get("vars") or {}, "keyring_pins": str(workdir / "keyring.sha256"), "hosts": hosts}
    path = workdir / "hosts.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    inv = load_inventory(path, keys_must_exist=False)
    by_host = roles_of(list(inv.hosts.values()), inv.roles_path if hasattr(inv, "roles_path") else ())
    out = []
    for name, host in inv.hosts.items():
        facts = json.loads((DATA / "replay-lab-facts" / f"{name}.json").read_text())
        out.append((tuple(by_host[name]), host, facts))
    return out


def one(roles, host, facts):
    from fleet.engine import probe
    from fleet.engine.decided import check_sections, decide_tasks

    decided = decide_tasks(roles, host, facts)
    return decided, check_sections(decided, 86400.0, have=probe.programs_of(facts), install=True)


def digest(decided, checks) -> str:
    """Every byte of what a host's Decided and its checks carry."""
    h = hashlib.sha256(json.dumps(decided.decisions_json, sort_keys=True, default=str).encode())
    for t in decided.tasks:
        h.update(repr((t.id, t.spec, t.enabled, t.skip_reason, t.skip_condition, t.why, t.deadline,
                       type(t.resource).__name__, t.resource.p,
                       getattr(t.resource, "variables", None))).encode())
        if t.enabled:
            h.update(t.resource.check().encode())
    h.update(repr(checks).encode())
    return h.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--digest", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = hosts_and_facts(Path(tmp))
    for case in cases:
        one(*case)                       # compiled texts, imports: what a run pays once
    if args.digest:
        for roles, host, facts in cases:
            print(host.name, digest(*one(roles, host, facts)))
        return 0
    if args.profile:
        import cProfile
        import pstats
        roles, host, facts = cases[-1]
        prof = cProfile.Profile(time.process_time)
        prof.runcall(lambda: [one(roles, host, facts) for _ in range(args.iterations)])
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return 0
    for roles, host, facts in cases:
        runs = []
        for _ in range(args.repeats):
            started = time.process_time()
            for _ in range(args.iterations):
                one(roles, host, facts)
            runs.append((time.process_time() - started) / args.iterations * 1000)
        print(f"{host.name:8} decide_tasks+check_sections {min(runs):.3f} ms a host (min of {args.repeats}; "
              f"runs {', '.join(f'{r:.3f}' for r in runs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
