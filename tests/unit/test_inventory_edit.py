"""One writer of inventory text (fleet/inventory/edit.py), under one lock: a bootstrap adding a pod and a forget
taking another out, run at the same instant on a real file, lose neither edit. The interleaving is forced: the
add holds its new text (read, changed, not yet renamed) until the forget has started and had time to read the
file; the same race without the lock loses the forget's edit, which proves the race is really run."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from fleet.inventory import edit, load_inventory
from fleet.inventory.edit import without_host
from fleet.workflows.pod_entry import HEADER, write_entry
from fleet.workflows.ssh_line import Target
from fleet.workflows.forget import forget

START = HEADER + "vars: {cuda_version: '13.0'}   # mine\nhosts:\n  old-pod:\n    address: 203.0.113.7\n" \
                 "  desk: {address: 203.0.113.5}\n"


def race(tmp_path, monkeypatch) -> tuple[str, list]:
    """A bootstrap's add of new-pod and a forget of old-pod, the add's write held open while the forget runs."""
    path = tmp_path / "pods.yaml"
    path.write_text(START)
    forget_started, add_holding = threading.Event(), threading.Event()
    real_write = edit.write_atomic

    def held_write(target, data, **kw):
        if threading.current_thread().name == "add":
            add_holding.set()
            assert forget_started.wait(10)
            time.sleep(0.3)          # the forget, unlocked, reads and writes in this window
        return real_write(target, data, **kw)

    monkeypatch.setattr(edit, "write_atomic", held_write)
    errors: list = []

    def add():
        try:
            write_entry(path, "new-pod", Target("root", "203.0.113.9", 17322))
        except Exception as exc:     # noqa: BLE001 - reported by the test
            errors.append(exc)

    def drop():
        assert add_holding.wait(10)
        forget_started.set()
        try:
            forget(path, "old-pod", tmp_path / "known_hosts")
        except Exception as exc:     # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=add, name="add"), threading.Thread(target=drop, name="forget")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return path.read_text(), errors


def test_a_bootstrap_and_a_forget_at_once_lose_neither_edit(tmp_path, monkeypatch):
    text, errors = race(tmp_path, monkeypatch)
    assert errors == []
    hosts = load_inventory(tmp_path / "pods.yaml").hosts
    assert sorted(hosts) == ["desk", "new-pod"], text
    assert text.startswith(HEADER + "vars: {cuda_version: '13.0'}   # mine\nhosts:\n  desk:")   # the rest kept


def test_without_the_lock_the_same_race_loses_an_edit(tmp_path, monkeypatch):
    monkeypatch.setattr(edit, "locked", lambda path: contextlib.nullcontext())
    text, errors = race(tmp_path, monkeypatch)
    assert errors == []
    assert sorted(load_inventory(tmp_path / "pods.yaml").hosts) == ["desk", "new-pod", "old-pod"]  # forget lost


def test_the_lock_is_held_across_processes_as_well(tmp_path):
    """flock on the inventory's directory: another process's edit waits for it (a second fleet, not a thread)."""
    import subprocess
    import sys

    path = tmp_path / "pods.yaml"
    path.write_text(START)
    code = ("import sys, pathlib; from fleet.inventory.edit import edit, without_host; p = pathlib.Path(sys.argv[1]);"
            "edit(p, lambda t: without_host(t, 'desk', str(p)), lambda temp: None)")
    with edit.locked(path):
        child = subprocess.Popen([sys.executable, "-c", code, str(path)])
        time.sleep(0.5)
        assert child.poll() is None, "the other process edited while the lock was held"
        path.write_text(START.replace("desk", "desk2") + "  desk: {address: 203.0.113.6}\n")
    assert child.wait(20) == 0
    assert sorted(load_inventory(path).hosts) == ["desk2", "old-pod"]


@pytest.mark.parametrize("name, gone", [("old-pod", "    address: 203.0.113.7\n"), ("desk", "desk:")])
def test_taking_an_entry_out_keeps_every_other_line(name, gone):
    out = without_host(START, name, "pods.yaml")
    assert gone not in out and out.count("\n") < START.count("\n")
    assert out.startswith(HEADER + "vars: {cuda_version: '13.0'}   # mine\nhosts:\n")
