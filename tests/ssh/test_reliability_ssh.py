"""Reliability (issue 16), SSH layer against the in-process server: bad known_hosts lines, @revoked keys,
output floods. Part of the reliability suite (see tests/reliability/README.md)."""

from __future__ import annotations

import paramiko
import pytest
from mockserver import fleet_known_hosts, host_key_line, ssh_host
from mockssh.server import SERVER_KEY_PATH

from fleet.connection import MAX_CAPTURE, ConnectOptions, connect
from fleet.errors import HostKeyError
from fleet.connection.hostkeys import read_known_hosts

SERVER_B64 = paramiko.RSAKey(filename=SERVER_KEY_PATH).get_base64()
BAD_LINES = [
    "@cert-authority *.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEx4bW9ja2tleW1vY2trZXltb2Nra2V5bW9ja2s=",
    "[203.0.113.9]:22 ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC",      # truncated by a crash mid-write
    "[203.0.113.9]:22 ssh-ed25519 %%%not-base64%%%",
    "[203.0.113.9]:22",
    "@revoked",
    "@unknown-marker host ssh-rsa AAAA",
]


def write_known(lines: list[str]):
    path = fleet_known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("bad", BAD_LINES)
def test_one_bad_line_is_skipped_with_file_and_line_and_the_host_still_connects(server, bad, monkeypatch):
    monkeypatch.setattr("fleet.connection.hostkeys._warned", set())   # said once per process: start this test afresh
    path = write_known(["# fleet known hosts", bad, host_key_line(server.port)])
    warnings = []
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5, on_warning=warnings.append)) as conn:
        assert conn.run(server.allow("echo ok")).stdout == "ok\n"
    _, _, problems = read_known_hosts(path)
    assert [p.split(": ")[0] for p in problems] == [f"{path}:2"]
    assert warnings == problems and "skipped" in warnings[0]


def test_a_revoked_host_key_is_refused_even_when_also_listed_as_known(server):
    path = write_known([host_key_line(server.port), f"@revoked * ssh-rsa {SERVER_B64}"])
    with pytest.raises(HostKeyError, match=rf"marked @revoked in {path}:2; refusing to connect"):
        connect(ssh_host(server.port), ConnectOptions(connect_timeout=5, accept_new_host_keys=True))


def test_a_flood_without_newlines_is_captured_bounded_with_a_marker(server, known):
    lines = []
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5)) as conn:
        res = conn.run(server.allow("head -c 20000000 /dev/zero | tr '\\0' x; echo; echo END"),
                       on_output=lines.append)
    assert res.exit == 0 and res.stdout.endswith("x\nEND\n")
    assert "[fleet: output truncated: " in res.stdout and len(res.stdout) < MAX_CAPTURE + 200
    assert len(lines) == 2 and len(lines[0]) == 64 << 10 and lines[1] == "END"   # a line is bounded too
