"""What the watchdog that ends a probe with its connection (fleet.shell.STOP_WITH_CONNECTION) costs the facts probe:
the probe's remote command timed with it and without it, interleaved round by round on the same hosts and the same
connection, medians (issue 26).

    fleet lab up LAB.yaml                         # a lab already up (FLEET_LAB_ROOT, FLEET_BENCH_NET's subnet)
    python3 bench/probe_watchdog.py --inventory LAB.yaml [--limit pod-570] [--rounds 30]

"without": session.run_sections as before the watchdog (shell.ends_with_connection returning the script as it is).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--limit", default=None)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    from fleet import shell
    from fleet.connection import connect
    from fleet.engine.session import gather
    from fleet.inventory import load_inventory

    real = shell.ends_with_connection
    kinds = {"without": lambda script, *, local: script, "with": real}
    print(f"probe's remote command, median (min) of {args.rounds} rounds, interleaved, one connection per host")
    print(f"{'host':10} {'without':>16} {'with':>16} {'difference':>11}")
    for host in load_inventory(Path(args.inventory)).select(args.limit):
        conn = connect(host)
        times = {kind: [] for kind in kinds}
        try:
            gather(conn, host, None)       # warm: the host's caches, the connection
            for i in range(args.rounds):
                for kind in (("without", "with") if i % 2 == 0 else ("with", "without")):
                    shell.ends_with_connection = kinds[kind]
                    started = time.monotonic()
                    record = gather(conn, host, None)
                    times[kind].append(time.monotonic() - started)
                    assert not record["probe"]["errors"], record["probe"]["errors"]
        finally:
            shell.ends_with_connection = real
            conn.close()
        med = {kind: statistics.median(values) for kind, values in times.items()}
        print(f"{host.name:10} " + " ".join(f"{med[k] * 1000:7.1f} ms ({min(times[k]) * 1000:5.1f})" for k in kinds)
              + f" {(med['with'] - med['without']) * 1000:+8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
