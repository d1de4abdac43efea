"""SSH like ssh, on real sshd hosts: a host behind a bastion, reached through ProxyJump in ~/.ssh/config.

The target's HostName is a name only the bastion can resolve (it is in the bastion's /etc/hosts, not this
machine's): the command can only succeed if fleet really went through the jump host, as `ssh -J` does.
"""

from __future__ import annotations

import io
import json
import socket

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet_lab.paths import lab_key, lab_known_hosts

HIDDEN_NAME = "pod-behind-bastion.fleet-lab.invalid"


def fleet(*argv: str, cwd) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240), err_console=Console(file=err, width=240, soft_wrap=True), cwd=cwd)
    return main(list(argv), env), out.getvalue(), err.getvalue()


@pytest.fixture
def behind_bastion(lab, isolated_home, tmp_path):
    """~/.ssh/config: `bastion` is the lab thor, `hidden` is pod-580 by a name only thor resolves."""
    lab.reset(["thor"])
    bastion = lab.inventory.hosts["thor"].address
    target = lab.inventory.hosts["pod-580"].address
    with lab.connect("thor") as conn:
        assert conn.run(f"echo '{target} {HIDDEN_NAME}' >> /etc/hosts").ok
    ssh = isolated_home / ".ssh"
    ssh.mkdir(mode=0o700)
    key = lab_key()
    (ssh / "config").write_text(f"Host bastion\n    HostName {bastion}\n    User root\n    IdentityFile {key}\n\n"
                                f"Host hidden\n    HostName {HIDDEN_NAME}\n    IdentityFile {key}\n"
                                "    ProxyJump bastion\n")
    # Host keys as ssh would know them: the bastion by its address, the target by its HostName.
    known = lab_known_hosts().read_text().splitlines()
    lines = [line for line in known if line.split()[0] == bastion]
    lines += [HIDDEN_NAME + line[len(target):] for line in known if line.split()[0] == target]
    (ssh / "known_hosts").write_text("\n".join(lines) + "\n")
    # fabric's own config files must not count (a broken one proves fleet never reads it).
    (isolated_home / ".fabric.yaml").write_text(":- [not yaml\n")
    inventory = tmp_path / "behind.yaml"
    inventory.write_text("hosts:\n  hidden: {address: hidden}\n")
    yield inventory
    lab.reset(["thor"])


def test_a_host_behind_a_proxyjump_is_reached_through_the_jump(behind_bastion, lab, tmp_path):
    with pytest.raises(OSError):
        socket.getaddrinfo(HIDDEN_NAME, 22)     # not from here: only the bastion knows the name
    code, out, err = fleet("run", str(behind_bastion), "--json", "--", "hostname", cwd=tmp_path)
    assert code == 0, out + err
    doc = json.loads(out)
    with lab.connect("pod-580") as conn:
        expected = conn.run("hostname").stdout
    assert doc["hosts"]["hidden"]["stdout"] == expected
    assert doc["stats"]["hidden"]["remote_commands"] == 1


def test_an_unresolvable_jump_target_fails_with_a_sentence(behind_bastion, isolated_home, tmp_path):
    config = isolated_home / ".ssh" / "config"
    config.write_text(config.read_text().replace(HIDDEN_NAME, "nowhere.fleet-lab.invalid"))
    code, out, err = fleet("run", str(behind_bastion), "--", "true", cwd=tmp_path)
    assert code == 1
    assert "jump host bastion could not reach nowhere.fleet-lab.invalid:22" in " ".join(err.split())
    assert "Traceback" not in out + err
