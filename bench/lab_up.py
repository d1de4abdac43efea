"""How long the lab takes: cold mirror build, profile layers, `up` of every host, `up` again, a first
command through fleet's SSH connection, `reset` of one host, `down`. Run as root:

    python3 bench/lab_up.py            # a throw-away lab root and 127.0.4.x addresses (never meets a demo lab)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fleet_lab as lab  # noqa: E402
from fleet_lab import control, mirror  # noqa: E402

HOSTS = {
    "thor": {"address": "127.0.4.11", "lab": {"profile": "thor"}},
    "spark": {"address": "127.0.4.12", "lab": {"profile": "spark"}, "user": "nvidia"},
    "pod-570": {"address": "127.0.4.13", "lab": {"profile": "h100-pod", "driver": "570.133.20"}},
    "pod-580": {"address": "127.0.4.14", "lab": {"profile": "h100-pod", "driver": "580.159.04", "compat": "installed"}},
}


def timed(label: str, fn):
    started = time.monotonic()
    result = fn()
    print(f"{label:<44} {time.monotonic() - started:7.3f} s")
    return result


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="fleet-lab-bench-") as tmp:
        root = Path(tmp) / "root"
        inv = Path(tmp) / "bench.yaml"
        inv.write_text(yaml.safe_dump({"hosts": HOSTS}))
        control.check_machine()
        try:
            timed("mirror build (cold, all stand-ins)", lambda: mirror.ensure(root))
            specs = control.lab_specs(inv)
            timed("profile layers (cold, incl. dpkg -i)",
                  lambda: [control.profile_layer(s, mirror.ensure(root), root) for s in specs])
            timed(f"up, {len(HOSTS)} hosts (caches warm)", lambda: lab.up(inv, root=root))
            timed("up again (all already up)", lambda: lab.up(inv, root=root))
            timed("first command over SSH (connect + uname)", lambda: first_command(inv, root))
            timed("reset of one host (pod-570)", lambda: lab.reset(inv, ["pod-570"], root=root))
            timed("down", lambda: lab.down(inv, root=root))
            timed(f"cold: mirror + layers + up, {len(HOSTS)} hosts", lambda: cold_up(inv, root))
        finally:
            lab.down(inv, root=root, purge=True)
    return 0


def first_command(inv: Path, root: Path) -> None:
    import os

    from fleet.connection import ConnectOptions, connect
    from fleet.inventory import load_inventory

    os.environ["FLEET_LAB_ROOT"] = str(root)
    host = load_inventory(inv).hosts["thor"]
    with connect(host, ConnectOptions(known_hosts=root / "fleet_known_hosts")) as conn:
        assert conn.run("uname -m").stdout.strip() == "aarch64"


def cold_up(inv: Path, root: Path) -> None:
    lab.down(inv, root=root, purge=True)
    lab.up(inv, root=root)


if __name__ == "__main__":
    sys.exit(main())
