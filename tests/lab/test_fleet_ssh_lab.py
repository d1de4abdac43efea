"""`fleet ssh NAME` (issue 50): OpenSSH's own client to a pod as fleet reaches it (its key, the host keys fleet
trusts, strict checking), and `--config`, the same as an ~/.ssh/config stanza that OpenSSH, scp and rsync use by
name. Both are asked the way a person uses them: a real ssh process, its output compared with the host's."""

from __future__ import annotations

import os
import re
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


def readme_copy_lines() -> list[str]:
    """The README's "Data onto the pod" commands (`$ ...` lines, their comments left out), in order."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("- **Data onto the pod**", 1)[1].split("\n- **", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in re.findall(r"^      \$ (.+)$", block, re.M)]


def test_the_readmes_copy_commands_put_data_on_the_pod(lab, tmp_path):
    """The four copy lines as a person runs them, in a shell, with the pod's name for pod-a: the stanza into
    ~/.ssh/config, scp of a folder onto the volume, rsync of what changed since, and the tar pipe through `fleet
    ssh`. After each, the pod's files (asked through fleet's own connection) are the person's, byte for byte.
    OpenSSH reads ~/.ssh/config from the passwd entry's home, not $HOME: the test's ssh and scp are OpenSSH's with
    -F $HOME/.ssh/config, standing in for the person's own home."""
    lines = readme_copy_lines()
    assert [line.split()[0] for line in lines] == ["fleet", "scp", "rsync", "tar"], lines
    home, bin_dir, work = tmp_path / "home", tmp_path / "bin", tmp_path / "work"
    for d in (home / ".ssh", bin_dir, work / "data" / "sub"):
        d.mkdir(parents=True)
    (bin_dir / "fleet").write_text(f'#!/bin/sh\nexec {sys.executable} -m fleet "$@"\n')
    for tool in ("ssh", "scp"):
        (bin_dir / tool).write_text(f'#!/bin/sh\nexec /usr/bin/{tool} -F "$HOME/.ssh/config" "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin",
           "FLEET_INVENTORY": str(lab.inventory_path)}

    def run(line: str) -> None:
        done = subprocess.run(["bash", "-c", line.replace("pod-a", POD)], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (line, done.stdout, done.stderr)

    def on_pod() -> dict[str, str]:
        with lab.connect(POD) as conn:
            out = conn.run("cd /workspace/data && find . -type f -exec sha256sum {} + | sort -k2").stdout
        return {name: digest for digest, name in (line.split() for line in out.splitlines())}

    def here() -> dict[str, str]:
        found = subprocess.run("find . -type f -exec sha256sum {} + | sort -k2", shell=True, cwd=work / "data",
                               capture_output=True, text=True, check=True).stdout
        return {name: digest for digest, name in (line.split() for line in found.splitlines())}

    with lab.connect(POD) as conn:
        had_workspace = conn.run("test -d /workspace").exit == 0
        conn.run("mkdir -p /workspace && rm -rf /workspace/data")
    try:
        (work / "data" / "a.txt").write_text("first\n")
        (work / "data" / "sub" / "b.bin").write_bytes(bytes(range(256)) * 64)
        run(lines[0])
        assert f"Host {POD}\n" in (home / ".ssh" / "config").read_text()
        run(lines[1])
        assert on_pod() == here() and len(here()) == 2
        (work / "data" / "a.txt").write_text("changed\n")
        (work / "data" / "c.txt").write_text("new\n")
        run(lines[2])
        assert on_pod() == here() and len(here()) == 3
        (work / "data" / "sub" / "d.txt").write_text("by tar\n")
        run(lines[3])
        assert on_pod() == here() and len(here()) == 4
    finally:
        with lab.connect(POD) as conn:
            conn.run("rm -rf /workspace/data" + ("" if had_workspace else " && rmdir /workspace"))
