"""`fleet ssh NAME` (issue 50): OpenSSH's own client to a pod as fleet reaches it (its key, the host keys fleet
trusts, strict checking), and `--config`, the same as an ~/.ssh/config stanza that OpenSSH, scp and rsync use by
name. Both are asked the way a person uses them: a real ssh process, its output compared with the host's."""

from __future__ import annotations

import os
import subprocess
import sys

POD = "pod-570"


def fleet_ssh(lab, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fleet", "ssh", POD, "--inventory", str(lab.inventory_path), *argv],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, env=dict(os.environ))


def test_fleet_ssh_runs_a_command_there_with_the_pods_key_and_known_host_keys(lab):
    done = fleet_ssh(lab, "--", "cat /etc/hostname; id -un")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1] == "root", done.stdout
    with lab.connect(POD) as conn:
        assert conn.run("cat /etc/hostname").stdout.split()[0] == done.stdout.split()[0]


def test_the_config_stanza_works_for_openssh_by_name(lab, tmp_path):
    done = fleet_ssh(lab, "--config")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Host {POD}\n") and "StrictHostKeyChecking yes" in done.stdout, done.stdout
    config = tmp_path / "ssh_config"
    config.write_text(done.stdout)
    asked = subprocess.run(["ssh", "-F", str(config), "-o", "BatchMode=yes", POD, "id -un"], capture_output=True,
                           text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert asked.returncode == 0 and asked.stdout.strip() == "root", asked.stderr
    # scp by name, as a renter copies data onto a pod
    data = tmp_path / "data.txt"
    data.write_text("some data\n")
    copied = subprocess.run(["scp", "-F", str(config), "-o", "BatchMode=yes", str(data), f"{POD}:/tmp/data.txt"],
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert copied.returncode == 0, copied.stderr
    with lab.connect(POD) as conn:
        assert conn.run("cat /tmp/data.txt").stdout == "some data\n"
