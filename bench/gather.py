"""How long one host's facts gather takes on the lab (one SSH connection + one remote command).

    python3 bench/gather.py                       # starts its own lab (root, 127.0.3.x), measures, stops it
    python3 bench/gather.py --inventory inventories/lab.yaml   # a lab already up (`fleet lab up`)
    python3 bench/gather.py --rounds 10

Prints, per host: connect time, probe time (the one remote command, parsed), their sum, and the remote
command count; then the wall time of `fleet facts` over all hosts in parallel. Medians over the rounds.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

BENCH_NET = "127.0.3."  # neither the demo lab (127.0.1.x) nor the test lab (127.0.2.x)


def own_lab(workdir: Path):
    from _lab import own_lab as start

    return start(workdir, BENCH_NET, "bench")


def measure_host(host, rounds: int) -> dict:
    from fleet.connection import connect
    from fleet.engine.probe import gather

    connects, probes, commands = [], [], []
    for _ in range(rounds):
        started = time.monotonic()
        conn = connect(host)
        connected = time.monotonic()
        try:
            record = gather(conn, host, None)
        finally:
            conn.close()
        probes.append(time.monotonic() - connected)
        connects.append(connected - started)
        commands.append(conn.remote_commands)
        assert not record["probe"]["errors"], record["probe"]["errors"]
    return {"connect": statistics.median(connects), "probe": statistics.median(probes),
            "total": statistics.median(c + p for c, p in zip(connects, probes)),
            "probe_min": min(probes), "commands": max(commands), "platform": record["platform"]}


def measure_parallel(inventory: Path, rounds: int) -> float:
    from rich.console import Console
    from fleet.cli import main
    from fleet.env import Environment

    walls = []
    for _ in range(rounds):
        env = Environment(console=Console(file=io.StringIO()), err_console=Console(file=io.StringIO()))
        started = time.monotonic()
        code = main(["facts", str(inventory), "--json"], env)
        walls.append(time.monotonic() - started)
        if code != 0:
            raise SystemExit(f"fleet facts exited {code}")
    return statistics.median(walls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", help="a lab inventory whose hosts are already up")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from fleet.inventory import load_inventory

    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as workdir:
        stop = None
        inventory = Path(args.inventory) if args.inventory else None
        if inventory is None:
            inventory, stop = own_lab(Path(workdir))
        try:
            hosts = load_inventory(inventory).select(None)
            print(f"\nper host, median of {args.rounds} rounds (sequential, one host at a time):")
            print(f"{'host':10} {'platform':12} {'connect':>9} {'probe':>9} {'total':>9} {'probe min':>10} {'cmds':>5}")
            for host in hosts:
                m = measure_host(host, args.rounds)
                print(f"{host.name:10} {m['platform']:12} {m['connect']:8.3f}s {m['probe']:8.3f}s {m['total']:8.3f}s "
                      f"{m['probe_min']:9.3f}s {m['commands']:5d}")
            wall = measure_parallel(inventory, args.rounds)
            print(f"\n`fleet facts` over all {len(hosts)} hosts in parallel (records written): {wall:.3f} s wall, "
                  f"median of {args.rounds}")
        finally:
            if stop:
                stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
