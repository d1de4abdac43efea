"""`fleet lab` through the real CLI, and the one-sentence errors where the lab cannot run."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.errors import LabError
from fleet_lab import control


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True))
    return main(list(argv), env), out.getvalue(), err.getvalue()


def test_status_and_up_list_every_host(lab):
    code, out, _ = fleet("lab", "status")
    assert code == 0
    for name, host in lab.inventory.hosts.items():
        assert name in out and host.address in out
    code, out, _ = fleet("lab", "up", str(lab.inventory_path))
    assert code == 0 and out.count("already up") == 4, out


def test_status_of_an_inventory_as_the_readme_writes_it(lab, tmp_path):
    """`fleet lab status INVENTORY`: that inventory's hosts, each as the lab has it; a host of the same name
    that the lab does not run at that address is "not started" (another inventory's), never "running"."""
    from helpers import ok
    code, out, err = fleet("lab", "status", str(lab.inventory_path))
    assert code == 0, err
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()[2:]}
    assert {name: (row[1], row[4]) for name, row in rows.items()} == {
        name: (host.address, "running") for name, host in lab.inventory.hosts.items()}
    assert ok(lab, "thor", "uname -m").strip() == "aarch64"           # and the host itself answers
    moved = tmp_path / "elsewhere.yaml"
    moved.write_text(lab.inventory_path.read_text().replace(lab.inventory.hosts["thor"].address, "127.0.99.11"))
    code, out, err = fleet("lab", "status", str(moved))
    assert code == 0, err
    assert [line.split("\t")[4] for line in out.splitlines()[2:] if line.startswith("thor\t")] == ["not started"]


@pytest.mark.parametrize("action", ["up", "down", "status", "restart"])
def test_lab_outside_the_source_tree_is_bad_input_with_the_fix(lab, tmp_path, monkeypatch, action):
    """Where no inventories/lab.yaml is (the default of up/down), or a named inventory is missing: exit 2, one
    sentence naming the path and the fix; no lab host is stopped or started."""
    monkeypatch.chdir(tmp_path)
    before = [(s.name, s.state) for s in control.status()]
    argv = {"status": ("lab", action, "nowhere.yaml"), "restart": ("lab", action, "thor")}.get(action, ("lab", action))
    code, out, err = fleet(*argv)
    assert code == 2, out + err
    missing = "nowhere.yaml" if action == "status" else "inventories/lab.yaml"
    assert f"inventory {missing} not found (relative to {tmp_path})" in err and f"fleet lab {action} PATH" in err
    assert "internal error" not in err
    assert [(s.name, s.state) for s in control.status()] == before


def test_fleet_run_uname_through_the_lab(lab):
    code, out, err = fleet("run", str(lab.inventory_path), "--json", "--", "uname -m")
    assert code == 0, err
    doc = json.loads(out)
    assert {h: r["stdout"].strip() for h, r in doc["hosts"].items()} == \
        {"thor": "aarch64", "spark": "aarch64", "pod-570": "x86_64", "pod-580": "x86_64"}


def test_without_root_the_lab_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(control.os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match=r"needs root .* sudo fleet lab up"):
        control.up(tmp_path / "none.yaml", root=tmp_path)
    code, _, err = fleet("lab", "up", str(tmp_path / "none.yaml"))
    assert code == 2 and "error: the lab needs root" in err and len(err.strip().splitlines()) == 1


def test_without_sshd_the_lab_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(control, "SSHD", str(tmp_path / "no-sshd"))
    with pytest.raises(LabError, match="apt-get install openssh-server"):
        control.check_machine()


def test_bad_lab_parameters_are_input_errors(tmp_path):
    inv = tmp_path / "bad.yaml"
    inv.write_text("hosts:\n  p: {address: 127.0.2.40, lab: {profile: h100-pod, driver: 580.00}}\n")
    code, _, err = fleet("lab", "up", str(inv))
    assert code == 2 and "bad.yaml:2: lab driver of host 'p' reads as the number 580.0; quote it" in err
    inv.write_text("hosts:\n  p: {address: 10.0.0.5, lab: {profile: h100-pod}}\n")
    code, _, err = fleet("lab", "up", str(inv))
    assert code == 2 and "loopback address" in err
    inv.write_text("hosts:\n  p: {address: 127.0.2.40, lab: {profile: jetson}}\n")
    code, _, err = fleet("lab", "up", str(inv))
    assert code == 2 and "write 'profile:' as one of thor, spark, h100-pod, runpod-pytorch" in " ".join(err.split())
    assert "key:" not in inv.read_text()   # bad input: nothing written, no host touched
