"""`fleet bootstrap` from the command line, where no SSH server is needed: bad lines, unreachable pods."""

from __future__ import annotations

import io
import json
import shutil
import socket
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

PODS = Path(__file__).resolve().parents[2] / "examples" / "pods.yaml"   # the hand-written example


def fleet(tmp_path, *argv):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def closed_port() -> int:
    """A local port nobody listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def inventory(isolated_home):
    """The default inventory (fleet/inventory/home.py): the user's, whatever directory fleet runs in."""
    path = isolated_home / ".config" / "fleet" / "pods.yaml"
    path.parent.mkdir(parents=True)
    shutil.copy(PODS, path)
    return path


def test_a_bad_line_exits_2_before_anything_is_touched(tmp_path, inventory):
    before = inventory.read_bytes()
    code, out, err = fleet(tmp_path, "bootstrap", "ssh root@203.0.113.10 -p seventeen")
    assert code == 2
    assert "port 'seventeen'" in err and "Traceback" not in err
    assert inventory.read_bytes() == before


def test_an_unreachable_pod_is_one_sentence_exit_1_and_never_written(tmp_path, inventory):
    before = inventory.read_bytes()
    port = closed_port()
    code, out, err = fleet(tmp_path, "bootstrap", f"ssh root@127.0.0.1 -p {port}", "--wait", "0")
    assert code == 1
    assert f"cannot reach root@127.0.0.1:{port}: connection refused" in err
    assert "not added" in out and "Traceback" not in out + err
    assert inventory.read_bytes() == before                  # the default inventory, the user's
    assert sorted(p.name for p in inventory.parent.iterdir()) == ["pods.yaml"]
    assert list(tmp_path.iterdir()) == []                    # nothing where fleet ran


def test_unreachable_in_json(tmp_path, inventory):
    port = closed_port()
    code, out, _ = fleet(tmp_path, "bootstrap", f"root@127.0.0.1:{port}", "--wait", "0", "--json",
                         "--name", "my-pod")
    doc = json.loads(out)
    assert code == 1
    host = doc["hosts"]["my-pod"]
    assert host["unreachable"] is True and host["bootstrap"]["added"] is False
    assert "connection refused" in host["bootstrap"]["error"]
    assert doc["stats"]["my-pod"]["remote_commands"] == 0


def test_a_name_taken_by_another_host_is_refused_before_connecting(tmp_path, inventory):
    code, _, err = fleet(tmp_path, "bootstrap", f"root@127.0.0.1:{closed_port()}", "--name", "pod-a")
    assert code == 2 and "'pod-a' already names another host" in err


def test_a_broken_inventory_is_named_with_its_line(tmp_path, inventory):
    inventory.write_text(inventory.read_text() + "  pod-c: {port: 22}\n")     # lands under groups:
    before = inventory.read_bytes()
    code, _, err = fleet(tmp_path, "bootstrap", f"root@127.0.0.1:{closed_port()}")
    lines = len(before.decode().splitlines())
    assert code == 2 and f"pods.yaml:{lines}: unknown key 'port'" in err
    assert inventory.read_bytes() == before
