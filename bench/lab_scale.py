"""`fleet lab up` of many hosts: 4, 30 and 100 by default (mixed profiles), on a throw-away root. Run as root:

    python3 bench/lab_scale.py [--net 127.0.4] [--apply] [N ...]

Prints, per N: `up` of N fresh hosts (mirror and profile layers built beforehand, not counted), `up` again
(all already up), one `fleet run -- true` over every host through fleet's own SSH connections, and `down`.
--apply: also every host's first `fleet apply` at once (all N pods fetching from the lab's mirror together, as 30
pods' first applies did when 19 could not reach it: issue 46), which must exit 0 with every host converged, then
`apply --check --detailed-exitcode` that finds nothing left to change (exit 0); their log is kept as apply-N.log beside the run.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet_lab import control  # noqa: E402

PROFILES = [{"profile": "h100-pod", "driver": "570.133.20"}, {"profile": "thor"}, {"profile": "spark"},
            {"profile": "h100-pod", "driver": "580.159.04", "compat": "installed"}]


def inventory(path: Path, net: str, n: int) -> None:
    hosts = {f"h{i:03d}": {"address": f"{net}.{i + 1}", "lab": PROFILES[i % len(PROFILES)]} for i in range(n)}
    # as inventories/lab.yaml: the stand-in torch computes in pure Python (no perf smoke, no copies to time)
    path.write_text(yaml.safe_dump({"vars": {"verify_perf": False}, "hosts": hosts}, sort_keys=False))


def timed(fn) -> tuple[float, object]:
    started = time.monotonic()
    result = fn()
    return time.monotonic() - started, result


def fleet_apply(inv: Path, log: Path, *more: str) -> int:
    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment
    with open(log, "a") as out:
        env = Environment(console=Console(file=out, width=200), err_console=Console(file=out, width=200))
        return main(["apply", str(inv), *more], env)


def fleet_run(inv: Path) -> int:
    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment
    env = Environment(console=Console(file=io.StringIO()), err_console=Console(file=io.StringIO()))
    return main(["run", str(inv), "--", "true"], env)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--net", default="127.0.4")
    parser.add_argument("--apply", action="store_true", help="also N first applies at once, then a second")
    parser.add_argument("sizes", nargs="*", type=int, default=[4, 30, 100])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-lab-scale-") as tmp:
        root, inv = Path(tmp) / "root", Path(tmp) / "scale.yaml"
        inventory(inv, args.net, len(PROFILES))
        seconds, _ = timed(lambda: control.up(inv, None, root))
        print(f"warm-up (mirror + {len(PROFILES)} profile layers built): {seconds:.1f} s", flush=True)
        control.down(inv, root)
        print(f"{'hosts':>5} {'up':>8} {'up again':>9} {'run true':>9} {'down':>7}", flush=True)
        for n in args.sizes:
            inventory(inv, args.net, n)
            try:   # the lab comes down however the round ends (a failed apply left 30 hosts running once)
                up, states = timed(lambda: control.up(inv, None, root))
                assert all(s.state == "started" for s in states), states
                again, states = timed(lambda: control.up(inv, None, root))
                assert all(s.state == "already up" for s in states), states
                run, code = timed(lambda: fleet_run(inv))
                assert code == 0, f"fleet run exited {code}"
                if args.apply:
                    log = Path.cwd() / f"apply-{n}.log"
                    first, code = timed(lambda: fleet_apply(inv, log))
                    print(f"{n} first applies at once: exit {code}, {first:.1f} s (log: {log})", flush=True)
                    second, code2 = timed(lambda: fleet_apply(inv, log, "--check", "--detailed-exitcode"))
                    print(f"{n} --check after: exit {code2} (0: nothing left to change), {second:.1f} s", flush=True)
                    assert code == 0 and code2 == 0, f"apply exited {code} then {code2}: see {log}"
            finally:
                down, _ = timed(lambda: control.down(inv, root))
            print(f"{n:>5} {up:>7.1f}s {again:>8.1f}s {run:>8.1f}s {down:>6.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
