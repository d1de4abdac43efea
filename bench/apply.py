"""First apply, no-op apply and `fleet run true` on the lab: wall time and remote commands per host.

    python3 bench/apply.py             # its own lab (root, 127.0.4.x), fresh hosts, measures, removes the lab
    python3 bench/apply.py --rounds 5  # no-op apply and run repeated; medians printed

Prints per host: the first apply's seconds and remote commands, the no-op apply's, and the ratio; then the wall
time of each whole command over all hosts in parallel. Figures, not assertions: this machine is shared.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

NET = "127.0.4."


def own_lab(workdir: Path):
    from _lab import own_lab as start

    return start(workdir, NET, "bench-apply")


def fleet_json(*argv: str) -> tuple[float, dict]:
    from rich.console import Console
    from fleet.cli import main
    from fleet.env import Environment

    out = io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=io.StringIO()))
    started = time.monotonic()
    code = main(list(argv), env)
    wall = time.monotonic() - started
    doc = json.loads(out.getvalue())
    if code != 0:
        raise SystemExit(f"fleet {' '.join(argv)} exited {code}: {json.dumps(doc)[:2000]}")
    return wall, doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inventory, stop = own_lab(Path(tmp))
        try:
            first_wall, first = fleet_json("apply", str(inventory), "--json")
            noops = [fleet_json("apply", str(inventory), "--json") for _ in range(args.rounds)]
            runs = [fleet_json("run", str(inventory), "--json", "--", "true") for _ in range(args.rounds)]
        finally:
            stop()
    print(f"\n{'host':<9} {'first s':>8} {'cmds':>5} {'changed':>8} {'no-op s':>8} {'cmds':>5} {'changed':>8} "
          f"{'ratio':>6} {'run true s':>10}")
    for host, stats in first["stats"].items():
        noop_s = statistics.median(d["stats"][host]["seconds"] for _, d in noops)
        noop_cmds = max(d["stats"][host]["remote_commands"] for _, d in noops)
        noop_changed = max(d["hosts"][host]["changed"] for _, d in noops)
        run_s = statistics.median(d["stats"][host]["seconds"] for _, d in runs)
        print(f"{host:<9} {stats['seconds']:>8.2f} {stats['remote_commands']:>5} {first['hosts'][host]['changed']:>8} "
              f"{noop_s:>8.2f} {noop_cmds:>5} {noop_changed:>8} {stats['seconds'] / noop_s:>5.1f}x {run_s:>10.3f}")
    noop_wall = statistics.median(w for w, _ in noops)
    run_wall = statistics.median(w for w, _ in runs)
    print(f"\nwall, all hosts in parallel: first apply {first_wall:.2f} s, no-op apply {noop_wall:.2f} s "
          f"({first_wall / noop_wall:.1f}x), fleet run true {run_wall:.2f} s (median of {args.rounds})")


if __name__ == "__main__":
    main()
