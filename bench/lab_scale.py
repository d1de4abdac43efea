"""`fleet lab up` of many hosts: 4, 30 and 100 by default (mixed profiles), on a throw-away root. Run as root:

    python3 bench/lab_scale.py [--net 127.0.4] [N ...]

Prints, per N: `up` of N fresh hosts (mirror and profile layers built beforehand, not counted), `up` again
(all already up), one `fleet run -- true` over every host through fleet's own SSH connections, and `down`.
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
    path.write_text(yaml.safe_dump({"hosts": hosts}, sort_keys=False))


def timed(fn) -> tuple[float, object]:
    started = time.monotonic()
    result = fn()
    return time.monotonic() - started, result


def fleet_run(inv: Path) -> int:
    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment
    env = Environment(console=Console(file=io.StringIO()), err_console=Console(file=io.StringIO()))
    return main(["run", str(inv), "--", "true"], env)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--net", default="127.0.4")
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
            up, states = timed(lambda: control.up(inv, None, root))
            assert all(s.state == "started" for s in states), states
            again, states = timed(lambda: control.up(inv, None, root))
            assert all(s.state == "already up" for s in states), states
            run, code = timed(lambda: fleet_run(inv))
            assert code == 0, f"fleet run exited {code}"
            down, _ = timed(lambda: control.down(inv, root))
            print(f"{n:>5} {up:>7.1f}s {again:>8.1f}s {run:>8.1f}s {down:>6.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
