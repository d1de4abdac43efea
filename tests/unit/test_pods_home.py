"""One home for pods (issue 50): every command given no inventory uses the user's ~/.config/fleet/pods.yaml (or
$FLEET_INVENTORY), whatever directory it runs in; a pod another known inventory holds is named, not added twice;
`fleet forget` keeps a host key another known inventory still uses; a retried bootstrap keeps its --set. Through the
real CLI on real files; the pods' addresses are closed ports or TEST-NET, so nothing is contacted."""

from __future__ import annotations

import io
import socket

import pytest
import yaml
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.inventory.edit import insert_host, with_host_vars
from fleet.workflows.pod_entry import HEADER
from fleet.workflows.ssh_line import Target

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"


def fleet(cwd, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True), cwd=cwd)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def home(isolated_home, monkeypatch):
    monkeypatch.delenv("FLEET_INVENTORY", raising=False)
    return isolated_home / ".config" / "fleet"


def pods(path, *entries: tuple[str, Target]):
    text = HEADER + "hosts:\n"
    for name, target in entries:
        text = insert_host(text, name, target, when="then")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def test_validate_apply_and_facts_given_no_inventory_use_the_users_pods_from_any_directory(home, tmp_path):
    pods(home / "pods.yaml", ("pod-a", Target("root", "203.0.113.7", 17322)))
    code, out, err = fleet(tmp_path, "validate")
    assert code == 0, err
    assert f"{home / 'pods.yaml'}: valid: 1 host" in out
    code, out, err = fleet(tmp_path, "hosts", "--json")
    assert code == 0 and '"pod-a"' in out, err
    assert list(tmp_path.iterdir()) == []


def test_no_default_inventory_yet_says_where_bootstrap_puts_pods(home, tmp_path):
    code, _, err = fleet(tmp_path, "apply")
    assert code == 2
    assert "~/.config/fleet/pods.yaml does not exist yet (fleet bootstrap adds pods there)" in " ".join(err.split())


def test_a_pod_known_in_another_inventory_by_address_is_named_not_added_twice(home, tmp_path):
    port = closed_port()
    team = tmp_path / "team.yaml"
    pods(team, ("gpu-1", Target("root", "127.0.0.1", port)))
    (home / "inventories").parent.mkdir(parents=True, exist_ok=True)
    (home / "inventories").write_text(f"{team}\n")        # bootstrap remembered it
    code, out, err = fleet(tmp_path, "bootstrap", f"ssh root@127.0.0.1 -p {port}", "--name", "pod-b")
    said = " ".join(err.split())
    assert code == 2, out + err
    assert f"{team}:" in said and f"is already 'gpu-1' in {team}" in said
    assert f"fleet forget gpu-1 --inventory {team}" in said
    assert not (home / "pods.yaml").exists()


def test_forget_keeps_a_host_key_another_known_inventory_uses(home, tmp_path):
    mine = home / "pods.yaml"
    pods(mine, ("pod-a", Target("root", "203.0.113.7", 17322)))
    team = tmp_path / "team.yaml"
    pods(team, ("gpu-1", Target("root", "203.0.113.7", 17322)))
    (home / "inventories").write_text(f"{team}\n")
    known = home / "known_hosts"
    known.write_text(f"[203.0.113.7]:17322 {KEY}\n")
    code, out, err = fleet(tmp_path, "forget", "pod-a")
    assert code == 0, err
    assert not yaml.safe_load(mine.read_text())["hosts"]      # its entry out
    assert known.read_text() == f"[203.0.113.7]:17322 {KEY}\n"
    assert f"gpu-1 in {team} uses that address too" in " ".join(err.split())
    # with the other inventory's pod forgotten too, the key goes
    code, out, err = fleet(tmp_path, "forget", "gpu-1", "--inventory", str(team))
    assert code == 0, err
    assert known.read_text() == ""


def test_a_retried_bootstrap_refuses_a_set_its_entry_contradicts_naming_the_line(home, tmp_path):
    port = closed_port()
    text = pods(home / "pods.yaml", ("pod-a", Target("root", "127.0.0.1", port, vars={"verify_perf": True})))
    code, out, err = fleet(tmp_path, "bootstrap", f"ssh root@127.0.0.1 -p {port}", "--set", "verify_perf=off")
    line = text.splitlines().index("      verify_perf: true") + 1
    assert code == 2, out + err
    said = " ".join(err.split())
    assert f"pods.yaml:{line}: pod-a's entry sets verify_perf: true and --set says false" in said, said
    assert (home / "pods.yaml").read_text() == text


def test_a_set_is_added_under_the_entrys_own_vars_every_other_line_kept():
    text = ("hosts:\n  a:   # mine\n    address: 10.0.0.1\n    vars:\n      x: 1   # keep\n\n      y: 2\n"
            "  b:\n    address: 10.0.0.2\ngroups:\n  g: [a]\n")
    assert with_host_vars(text, "a", {"verify_perf": False}, "f") == text.replace(
        "      y: 2\n", "      y: 2\n      verify_perf: false   # --set at bootstrap\n")
    assert with_host_vars(text, "b", {"torch_version": "2.11.0"}, "f") == text.replace(
        "    address: 10.0.0.2\n", "    address: 10.0.0.2\n    vars:                  # --set at bootstrap\n"
        "      torch_version: 2.11.0\n")
