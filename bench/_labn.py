"""An N-host lab for the comparison: the demo inventory's four profiles (thor, spark, pod-570, pod-580)
repeated round-robin, on 127.0.7.x (this bench's subnet) under a fixed root whose mirror and profile layers
are kept between runs (down without purge), so a second bench run starts its hosts in seconds."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NET = os.environ.get("FLEET_BENCH_NET", "127.0.7")
FIRST = int(os.environ.get("FLEET_BENCH_FIRST", "11"))   # addresses NET.11 .. NET.(10+N): 100 hosts end at .110


def lab_root() -> Path:
    """$FLEET_BENCH_ROOT, else a fixed root per user: a second bench at the same time needs its own (and its
    own FLEET_BENCH_NET or FLEET_BENCH_FIRST)."""
    if os.environ.get("FLEET_BENCH_ROOT"):
        return Path(os.environ["FLEET_BENCH_ROOT"])
    return Path(tempfile.gettempdir()) / f"fleet-lab-bench-compare-{os.getuid()}"


def inventory_doc(n: int) -> dict:
    """inventories/lab.yaml's vars and groups, its hosts cycled to n, each on its own address."""
    import yaml

    demo = yaml.safe_load((ROOT / "inventories" / "lab.yaml").read_text())
    profiles = list(demo["hosts"].items())
    hosts, member = {}, {}
    for i in range(n):
        base, spec = profiles[i % len(profiles)]
        name = f"{base}-{i + 1:03d}"
        hosts[name] = dict(spec, address=f"{NET}.{FIRST + i}")
        member[base] = member.get(base, []) + [name]
    groups = {}
    for group, body in demo.get("groups", {}).items():
        names = [h for base in body["hosts"] for h in member.get(base, [])]
        if names:
            groups[group] = dict(body, hosts=names)
    return {"facts_dir": "facts", "vars": demo["vars"], "hosts": hosts, "groups": groups}


def up(workdir: Path, n: int) -> Path:
    """Write the inventory, start every host fresh (their earlier writes forgotten); returns its path."""
    import yaml
    from fleet_lab import control

    if n > 255 - FIRST:
        raise SystemExit(f"at most {255 - FIRST} hosts fit on {NET}.x")
    inventory = workdir / f"lab-{n}.yaml"
    inventory.write_text(yaml.safe_dump(inventory_doc(n), sort_keys=False))
    os.environ["FLEET_LAB_ROOT"] = str(lab_root())
    started = time.monotonic()
    reset(inventory)   # stop, forget earlier writes, start: fresh hosts whether or not a run left them up
    print(f"lab: {n} hosts up and fresh in {time.monotonic() - started:.1f} s (root {lab_root()})", flush=True)
    return inventory


def reset(inventory: Path) -> None:
    """Fresh hosts for the next tool's first run."""
    from fleet.inventory import load_inventory
    from fleet_lab import control

    control.reset(inventory, list(load_inventory(inventory).hosts), lab_root())


def down(inventory: Path, purge: bool) -> None:
    from fleet_lab import control

    control.down(inventory, lab_root(), purge=purge)
