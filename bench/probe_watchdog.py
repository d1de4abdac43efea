"""What the watchdog that ends a probe with its connection (fleet.shell.STOP_WITH_CONNECTION) costs the facts probe:
the probe's remote command timed with it and without it, interleaved round by round on the same hosts and the same
connection, medians (issue 26).

    fleet lab up LAB.yaml                         # a lab already up (FLEET_LAB_ROOT, FLEET_BENCH_NET's subnet)
    python3 bench/probe_watchdog.py --inventory LAB.yaml [--limit pod-570] [--rounds 30]
    python3 bench/probe_watchdog.py --cpu [--rounds 30]     # no lab: this machine as the host

"without": probe.run_sections as before the watchdog (shell.ends_with_connection returning the script as it is).
--cpu: the CPU time (user + system) of every process one probe starts, the watchdog included, on this machine:
the probe script as the lab sends it, run by bash under this process made a child subreaper (prctl
PR_SET_CHILD_SUBREAPER), so every descendant, the disowned watchdog too, is reaped here with its rusage (wait4).
CPU time, not wall time: it does not move with the machine's load as the remote command's wall time does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu_of(script: str) -> float:
    """Seconds of CPU (user + system) of `bash -c script` and every process it started, all reaped here."""
    import os
    import subprocess

    proc = subprocess.Popen(["bash", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    total = 0.0
    while True:
        try:
            pid, _, usage = os.wait4(-1, 0)
        except ChildProcessError:        # none left: the watchdog too has ended (it looks once a second)
            return total
        total += usage.ru_utime + usage.ru_stime
        del pid


def cpu(rounds: int) -> None:
    import ctypes
    import os

    from fleet import shell
    from fleet.engine import probe

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:     # PR_SET_CHILD_SUBREAPER
        raise SystemExit(f"prctl: {os.strerror(ctypes.get_errno())}")
    print(f"CPU (user + system) of every process started, this machine, median of {rounds}, interleaved:")
    # the watchdog alone: a command of 0.15 s (a probe's time on a real host) that uses no CPU itself
    for what, script in (("the facts probe", probe.script()), ("`sleep 0.15` (the watchdog alone)", "sleep 0.15")):
        kinds = {"without": script, "with": shell.ends_with_connection(script, local=False)}
        times = {kind: [] for kind in kinds}
        cpu_of(script)                           # warm
        for i in range(rounds):
            for kind in (("without", "with") if i % 2 == 0 else ("with", "without")):
                times[kind].append(cpu_of(kinds[kind]))
        med = {kind: statistics.median(values) for kind, values in times.items()}
        print(f"  {what}: " + ", ".join(f"{kind} {med[kind] * 1000:.1f} ms" for kind in kinds)
              + f"; difference {(med['with'] - med['without']) * 1000:+.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory")
    parser.add_argument("--cpu", action="store_true", help="this machine as the host: CPU of one probe")
    parser.add_argument("--limit", default=None)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    if args.cpu:
        cpu(args.rounds)
        return 0
    if not args.inventory:
        parser.error("--inventory LAB.yaml (a lab already up) or --cpu")

    from fleet import shell
    from fleet.connection import connect
    from fleet.engine.probe import gather
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
