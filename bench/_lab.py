"""A throw-away lab of the demo inventory's hosts on its own addresses and root, for benchmarks."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def own_lab(workdir: Path, net: str, name: str):
    """Start it; returns (inventory path, stop) where stop() removes every trace (processes, mounts, root)."""
    import yaml
    from fleet_lab import control, testing

    doc = testing.test_inventory_doc()
    for host in doc["hosts"].values():
        host["address"] = net + host["address"].rsplit(".", 1)[1]
    root = Path(tempfile.gettempdir()) / f"fleet-lab-{name}-{os.getuid()}"
    inventory = workdir / "lab.yaml"
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
    os.environ["FLEET_LAB_ROOT"] = str(root)
    started = time.monotonic()
    control.up(inventory, None, root)
    print(f"lab up: {time.monotonic() - started:.2f} s ({len(doc['hosts'])} hosts, root {root})")
    return inventory, lambda: control.down(inventory, root, purge=True)
