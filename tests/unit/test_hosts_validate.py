"""`fleet hosts` and `fleet validate` (issue 38): an inventory listed and checked with no host contacted (the
addresses are TEST-NET: nothing answers there, so a connection attempt would wait out its timeout)."""

from __future__ import annotations

import io
import json
import time

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

INVENTORY = """\
groups:
  pods: {hosts: [pod-a, pod-b]}
hosts:
  pod-a: {address: 203.0.113.10, port: 17322}
  pod-b: {address: 203.0.113.11, user: ubuntu, roles: [torch, verify]}
"""


def fleet(*argv: str) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    began = time.monotonic()
    code = main(list(argv), Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True)))
    return code, out.getvalue(), err.getvalue(), time.monotonic() - began


def test_hosts_lists_how_each_is_reached_and_its_roles(tmp_path):
    inv = tmp_path / "pods.yaml"
    inv.write_text(INVENTORY)
    code, out, err, took = fleet("hosts", str(inv))
    assert code == 0 and took < 5, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == ["host", "reached as", "groups", "roles"]
    assert rows[1][:3] == ["pod-a", "root@203.0.113.10:17322", "pods"] and "cuda_toolkit" in rows[1][3]
    assert rows[2] == ["pod-b", "ubuntu@203.0.113.11", "pods", "torch verify"]
    code, out, _, _ = fleet("hosts", str(inv), "--json", "--limit", "pod-b")
    assert json.loads(out) == {"format": 1, "hosts": {"pod-b": {
        "target": "ubuntu@203.0.113.11", "connection": "ssh", "address": "203.0.113.11", "port": 22,
        "user": "ubuntu", "groups": ["pods"], "roles": ["torch", "verify"]}}}


def test_validate_says_valid_or_names_the_line_and_contacts_nobody(tmp_path):
    inv = tmp_path / "pods.yaml"
    inv.write_text(INVENTORY)
    code, out, err, took = fleet("validate", str(inv))
    assert code == 0 and took < 5 and "valid: 2 hosts" in out and "no host was contacted" in out, err
    code, _, err, _ = fleet("validate", str(inv), "--set", "torch_verison=2.11.0")
    assert code == 2 and "did you mean 'torch_version'" in err, err
    inv.write_text(INVENTORY.replace("roles: [torch, verify]", "roles: [torch, verfy]"))
    code, _, err, took = fleet("validate", str(inv))
    assert code == 2 and took < 5 and "pods.yaml:5" in err and "verify" in err, err
