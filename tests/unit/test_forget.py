"""`fleet forget`: a vanished pod out of the inventory (its entry only, every other byte kept), its facts records and
fleet's known_hosts, through the real CLI on real files; nothing is contacted."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import os

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.inventory import load_inventory
from fleet.inventory.edit import insert_host
from fleet.workflows.pod_entry import HEADER
from fleet.workflows.ssh_line import Target

KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
KEY_B = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300, soft_wrap=True), err_console=Console(file=err, width=300, soft_wrap=True))
    return main(list(argv), env), out.getvalue(), err.getvalue()


def hashed(host: str) -> str:
    salt = os.urandom(20)
    mac = hmac.new(salt, host.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(mac).decode()}"


@pytest.fixture
def pods(tmp_path):
    """An inventory as bootstrap leaves it after three pods (the user's comments and vars around them), their
    facts records, and fleet's known_hosts with their keys (one hashed, as HashKnownHosts writes it)."""
    path = tmp_path / "pods.yaml"
    text = HEADER + "vars:\n  cuda_version: '13.0'   # mine\n\nhosts:\n  # the desk box\n  desk:\n    address: 10.0.0.5\n"
    text = insert_host(text, "pod-a", Target("root", "203.0.113.7", 17322, "~/.ssh/id_ed25519"), when="then")
    before_b = text
    text = insert_host(text, "pod-b", Target("root", "203.0.113.8", 22), when="then")
    with_b = text
    text = insert_host(text, "pod-c", Target("root", "203.0.113.9", 40001), when="then")
    path.write_text(text)
    facts = tmp_path / "facts"
    facts.mkdir()
    for name in ("desk", "pod-a", "pod-b", "pod-c"):
        (facts / f"{name}.json").write_text(json.dumps({"host": name}))
    (facts / "pod-b.prev.json").write_text("{}")
    known = tmp_path / "known_hosts"
    known.write_text(f"[203.0.113.7]:17322 {KEY_A}\n10.0.0.5 {KEY_B}\n{hashed('203.0.113.8')} {KEY_A}\n"
                     f"203.0.113.8 {KEY_B}\n[203.0.113.8]:2222 {KEY_B}\n")
    return path, facts, known, before_b, with_b


def test_forget_takes_out_the_pod_and_nothing_else(pods):
    path, facts, known, before_b, with_b = pods
    after_c = path.read_text()
    code, out, err = fleet("forget", "pod-b", "--inventory", str(path), "--known-hosts", str(known))
    assert code == 0, err
    # the inventory is what it was with pod-c added but pod-b never: every other byte kept
    assert path.read_text() == after_c.replace(with_b[len(before_b):].split("  pod-c")[0], "", 1)
    assert set(load_inventory(path, keys_must_exist=False).hosts) == {"desk", "pod-a", "pod-c"}
    assert sorted(p.name for p in facts.iterdir()) == ["desk.json", "pod-a.json", "pod-c.json"]
    # both lines for 203.0.113.8 port 22 went (plain and hashed); port 2222 is another endpoint and stays
    assert known.read_text() == f"[203.0.113.7]:17322 {KEY_A}\n10.0.0.5 {KEY_B}\n[203.0.113.8]:2222 {KEY_B}\n"
    assert "pod-b: removed its entry in" in out and "2 host key line(s) of 203.0.113.8:22" in out


def test_forget_the_last_pod_and_the_middle_one_keeps_the_comments(pods):
    path, facts, known, _, _ = pods
    code, _, err = fleet("forget", "pod-c", "pod-a", "--inventory", str(path), "--known-hosts", str(known))
    assert code == 0, err
    text = path.read_text()
    assert text.startswith(HEADER + "vars:\n  cuda_version: '13.0'   # mine\n\nhosts:\n  # the desk box\n  desk:\n")
    assert "pod-a" not in text and "pod-c" not in text and "pod-b:" in text
    assert "[203.0.113.7]:17322" not in known.read_text()


def test_dry_run_changes_nothing(pods):
    path, facts, known, _, _ = pods
    before = (path.read_text(), known.read_text(), sorted(p.name for p in facts.iterdir()))
    code, out, err = fleet("forget", "pod-a", "--inventory", str(path), "--known-hosts", str(known), "--dry-run")
    assert code == 0 and "pod-a: would remove its entry" in out, err
    assert (path.read_text(), known.read_text(), sorted(p.name for p in facts.iterdir())) == before


def test_an_unknown_name_is_bad_input_and_nothing_changes(pods):
    path, facts, known, _, _ = pods
    before = (path.read_text(), known.read_text(), sorted(p.name for p in facts.iterdir()))
    code, out, err = fleet("forget", "pod-a", "pod-d", "--inventory", str(path), "--known-hosts", str(known))
    assert code == 2 and "no host named 'pod-d'" in err and "did you mean 'pod-c'?" in err, err
    assert (path.read_text(), known.read_text(), sorted(p.name for p in facts.iterdir())) == before


def test_a_group_member_and_a_shared_address(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("hosts:\n  a: {address: 192.0.2.1}\n  b: {address: 192.0.2.1}\n  c: {address: 192.0.2.3}\n"
                    "groups:\n  pods:\n    hosts: [c]\n")
    known = tmp_path / "known_hosts"
    known.write_text(f"192.0.2.1 {KEY_A}\n")
    code, _, err = fleet("forget", "c", "--inventory", str(path), "--known-hosts", str(known))
    assert code == 2 and "member of the group(s) pods" in err
    code, out, err = fleet("forget", "a", "--inventory", str(path), "--known-hosts", str(known))
    assert code == 0 and "kept the host key of 192.0.2.1:22" in err and "b uses that address too" in err
    assert known.read_text() == f"192.0.2.1 {KEY_A}\n"
    assert set(load_inventory(path, keys_must_exist=False).hosts) == {"b", "c"}
