"""What open SSH connections cost the controller while they wait (issue 46): N connections to the replaying server
(bench/_replay.py, as bench/controller.py starts it) opened at once, then held idle for S seconds; the process CPU
over the idle window, per connection-second. In a converged apply at 1,000 hosts each connection stays open for
most of the run while the controller works through the hosts, so this cost is paid per host for as long as the
run lasts (paramiko's thread waking to look for a keep-alive due, fleet's watchdog asking the server).

    python3 bench/idle_connections.py [--hosts 1000] [--seconds 20] [--address 127.0.22.250] [--port 22000]
                                      [--idle-wake SECONDS] [--no-watchdog]

--idle-wake sets fleet.connection.ssh.IDLE_WAKE for the run; --no-watchdog leaves fleet's watchdog out (to see
its share). The figures are this machine's (2 cores, shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import controller  # noqa: E402  (bench/controller.py: the replaying lab)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--address", default="127.0.22.250")
    parser.add_argument("--port", type=int, default=22000)
    parser.add_argument("--idle-wake", type=float)
    parser.add_argument("--no-watchdog", action="store_true")
    args = parser.parse_args()
    import fleet.connection.ssh as ssh
    from fleet.connection import open_connection
    from fleet.connection.base import ConnectOptions
    from fleet.inventory import load_inventory

    if args.idle_wake:
        ssh.IDLE_WAKE = args.idle_wake
    if args.no_watchdog:
        ssh._Watchdog.run = lambda self: None
    with tempfile.TemporaryDirectory(prefix="fleet-bench-idle-") as tmp:
        lab = controller.Lab(Path(tmp), args.hosts, args.address, args.port)
        try:
            found = load_inventory(str(lab.inventory)).hosts
            hosts = list(found.values()) if isinstance(found, dict) else list(found)
            conns, failed = [], []
            ready = threading.Barrier(len(hosts) + 1)

            def work(host) -> None:
                try:
                    conns.append(open_connection(host, ConnectOptions()))
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    failed.append(f"{getattr(host, 'name', host)}: {exc}")
                finally:
                    ready.wait()

            for host in hosts:
                threading.Thread(target=work, args=(host,), daemon=True).start()
            ready.wait()
            before = sum(os.times()[:2])
            time.sleep(args.seconds)
            spent = sum(os.times()[:2]) - before
            for conn in conns:
                conn.close()
        finally:
            lab.stop()
    print(f"{len(conns)} idle connections for {args.seconds:g} s (IDLE_WAKE {ssh.IDLE_WAKE:g} s, watchdog "
          f"{'off' if args.no_watchdog else 'on'}): {spent:.2f} s CPU = "
          f"{spent / max(len(conns), 1) / args.seconds * 1000:.3f} ms a connection-second")
    if failed:
        print(f"{len(failed)} failed to connect, e.g. {failed[0]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
