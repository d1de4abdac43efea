"""Plain helpers behind the `lab` pytest fixture (tests/lab/conftest.py): a TEST lab with its own root
and its own inventory on 127.0.2.x, so it never meets a demo lab on 127.0.1.x; and the tests' own two helpers:

    lab.write_inventory(path, {"pod-580": {"nap": "5"}}, roles=["napper"])   # the lab's inventory, narrowed
    wait_for(lambda: marker.exists(), "the command to start")               # a state reached, never a timing
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import control

# FLEET_TEST_LAB_NET (e.g. 127.0.4) lets two test runs share a machine without meeting.
_NET = os.environ.get("FLEET_TEST_LAB_NET", "127.0.2")
# The suite's lab: stand-ins at 1/1000 of the real sizes, served without a rate limit (fleet_lab/bandwidth.py);
# `fleet lab up` and bench/ default to 1/100 at a pod's scaled link. Set either variable to test another.
os.environ.setdefault("FLEET_LAB_SCALE", "1000")
os.environ.setdefault("FLEET_LAB_RATE", "off")
TEST_ADDRESSES = {"thor": f"{_NET}.11", "spark": f"{_NET}.12", "pod-570": f"{_NET}.13", "pod-580": f"{_NET}.14"}


def test_net() -> str:
    """The /24 (three parts) the test lab's hosts use."""
    return _NET


def test_root() -> Path:
    """A fixed place (not a fresh temp dir) so that a run killed half-way is cleaned up by the next."""
    suffix = "" if _NET == "127.0.2" else "-" + _NET.replace(".", "_")
    return Path(tempfile.gettempdir()) / f"fleet-lab-test-{os.getuid()}{suffix}"


def test_inventory_doc(demo: Path | None = None) -> dict:
    """inventories/lab.yaml with every address moved to 127.0.2.x and facts kept beside the copy."""
    demo = demo or Path(__file__).resolve().parents[1] / "inventories" / "lab.yaml"
    doc = yaml.safe_load(demo.read_text())
    for name, host in doc["hosts"].items():
        host["address"] = TEST_ADDRESSES.get(name, host["address"].replace("127.0.1.", _NET + ".", 1))
    doc["facts_dir"] = "facts"
    return doc


@dataclass
class TestLab:
    root: Path
    inventory_path: Path
    inventory: object = field(default=None)
    lock: object = field(default=None, repr=False)
    __test__ = False  # not a pytest test class

    def reset(self, names) -> None:
        """Fresh hosts (their writes forgotten), e.g. before applying roles to them."""
        control.reset(self.inventory_path, list(names) if not isinstance(names, str) else [names], self.root)

    def restart(self, names, driver: str | None = None) -> None:
        """Restart hosts keeping what they wrote, on another kernel driver where given (nothing re-applied)."""
        control.restart(self.inventory_path, list(names) if not isinstance(names, str) else [names], driver,
                        self.root)

    def exec(self, name: str, argv: list[str]):
        """A process in the host as `docker exec` starts one (no shell, no startup file): CompletedProcess."""
        from .host import LabHost
        return LabHost(name, self.root).exec(argv)

    def up(self, names=None):
        return control.up(self.inventory_path, names, self.root)

    def write_inventory(self, path: Path, hosts, *, facts_dir: str = "facts", drop: tuple = (), **top) -> Path:
        """The test inventory narrowed to `hosts` (a name, names, or name -> variables merged over the host's own)
        and written to `path`: what `fleet lab up` wrote into it kept (its vars, key, host keys, keyring digests),
        its groups dropped, the facts records in `facts_dir` (relative: beside the file), the top-level keys in
        `drop` left out, and each other keyword a top-level key of its own (roles=[...], roles_path=[...])."""
        doc = yaml.safe_load(self.inventory_path.read_text())
        wanted = ({hosts: {}} if isinstance(hosts, str) else dict(hosts) if isinstance(hosts, dict)
                  else dict.fromkeys(hosts, {}))
        doc["hosts"] = {name: {**doc["hosts"][name], "vars": {**doc["hosts"][name].get("vars", {}), **extra}}
                        if extra else doc["hosts"][name] for name, extra in wanted.items()}
        for key in ("groups", *drop):
            doc.pop(key, None)
        doc.update(facts_dir=str(facts_dir), **top)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def connect(self, name: str):
        """A fleet connection to one lab host (close it, or use it in a with-block)."""
        from fleet.connection import ConnectOptions, connect
        return connect(self.inventory.hosts[name], ConnectOptions(known_hosts=self.root / "fleet_known_hosts"))


def start_test_lab(workdir: Path | None = None) -> TestLab:
    """Write the test inventory, point FLEET_LAB_ROOT at the test root, start every host."""
    from fleet.inventory import load_inventory
    root = test_root()
    lock = _session_lock(root)
    workdir = Path(workdir or tempfile.mkdtemp(prefix="fleet-lab-inv-"))
    inv_path = workdir / "lab.yaml"
    inv_path.write_text(yaml.safe_dump(test_inventory_doc(), sort_keys=False))
    os.environ["FLEET_LAB_ROOT"] = str(root)   # `fleet lab` commands of the tests find this lab
    try:
        control.up(inv_path, None, root)
    except BaseException:
        lock.close()
        raise
    # loaded after `up`, which wrote the lab's key and known-hosts file into it
    return TestLab(root, inv_path, load_inventory(inv_path), lock)


def _session_lock(root: Path):
    """One test lab per machine at a time: a second test session waits here (the addresses are fixed)."""
    handle = open(f"{root}.lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"fleet lab: another test session holds {root}.lock; waiting for it to finish", file=sys.stderr)
        fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def stop_test_lab(lab: TestLab) -> None:
    try:
        control.down(lab.inventory_path, lab.root)
    finally:
        if os.environ.get("FLEET_LAB_ROOT") == str(lab.root):
            del os.environ["FLEET_LAB_ROOT"]
        if lab.lock:
            lab.lock.close()   # closing releases the flock


def wait_for(condition, what, seconds: float = 600.0, every: float = 0.05):
    """Ask `condition()` until it answers something true, and return that; fail naming `what` (a sentence, or a
    function giving one: what the host shows then) after `seconds`, a bound on a hang and never a speed expectation
    (these tests run on busy two-core machines beside other labs)."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {seconds:g} s: {what() if callable(what) else what}")
        time.sleep(every)
