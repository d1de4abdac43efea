"""`fleet bootstrap --set` never writes a password into the inventory it creates or edits (issue 49: a URL's
password went into a 0644 inventory)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment


def fleet(tmp_path, *argv):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("assignment, secret", [
    ("pip_index_url=https://me:s3cr3tPa55@pypi.example/simple", "s3cr3tPa55"),
    ("torch_index_url=https://ghp_0123456789abcdefghijABCDEFGHIJ@wheels.example/cu130", "ghp_0123456789"),
])
def test_a_credential_in_a_set_value_is_refused_before_anything_is_written_or_contacted(
        tmp_path, counting_port, assignment, secret):
    inventory = tmp_path / "pods.yaml"
    before = b"hosts:\n  old: {address: 10.0.0.9}\n"
    inventory.write_bytes(before)
    code, _, err = fleet(tmp_path, "bootstrap", f"ssh root@127.0.0.1 -p {counting_port.port}", "--inventory",
                         str(inventory), "--set", assignment, "--wait", "0")
    assert code == 2, err
    assert inventory.read_bytes() == before                  # the inventory's bytes, read back
    assert not counting_port.contacted()                     # and no host touched
    assert secret not in err
    assert "holds a credential" in err and "~/.netrc" in err and "PIP_INDEX_URL" in err
    # a fresh inventory is not created either
    fresh = tmp_path / "new.yaml"
    code, _, err = fleet(tmp_path, "bootstrap", f"ssh root@127.0.0.1 -p {counting_port.port}", "--inventory",
                         str(fresh), "--set", assignment, "--wait", "0")
    assert code == 2 and not fresh.exists()


def test_a_url_without_a_credential_is_kept(tmp_path):
    """The refusal is the credential's alone: the same URL without it passes the check and reaches the host's
    connection (refused here: nobody listens)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = fleet(tmp_path, "bootstrap", f"ssh root@127.0.0.1 -p {port}", "--inventory",
                         str(tmp_path / "pods.yaml"), "--set", "pip_index_url=https://pypi.example/simple",
                         "--wait", "0", "--connect-timeout", "2")
    assert code == 1 and "holds a credential" not in err
