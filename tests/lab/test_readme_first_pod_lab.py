"""The README's "Your first pod", followed as a new user would (issue 50): its `$ fleet ...` lines, in order, in an
empty directory with a HOME of its own, against a fresh lab pod with a /workspace volume (as RunPod's pods have).

The lab's two flags from "Try it on a fresh machine" are added to the bootstrap line (the lab's keyring pin and
verify_perf=false: the stand-in torch computes in pure Python); nothing else. Then the pod is asked over a plain
OpenSSH client, and the directory the person stood in is checked: fleet wrote nothing there (pods live in
~/.config/fleet/pods.yaml), so following the README inside a clone leaves the clone as it was and its own tests
green (tests/unit/test_readme_shape.py: no inventories/pods.yaml in a clone).
"""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet_lab import paths

ROOT = Path(__file__).resolve().parents[2]
POD = "pod-580"


def section() -> str:
    return (ROOT / "README.md").read_text().split("## Your first pod", 1)[1].split("\n## ", 1)[0]


def readme_commands() -> list[str]:
    """The `$ fleet ...` lines of the section, in order, without their trailing comments."""
    lines = re.findall(r"^    \$ (fleet .+)$", section(), re.M)
    return [line.split("  #", 1)[0].strip() for line in lines]


def fleet(cwd: Path, argv: list[str]) -> tuple[int, str, str]:
    """What a person sees on a 100-column terminal (stdout drawn as for a terminal; escape codes taken out)."""
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=100, force_terminal=True), err_console=Console(file=err, width=100, soft_wrap=True),
                      cwd=cwd)
    code = main(argv, env)
    return code, re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()), err.getvalue()


def plain_ssh(lab, command: str) -> str:
    """A plain OpenSSH client, as the person logs in with the line bootstrap printed: fleet is not in the path."""
    host = lab.inventory.hosts[POD]
    done = subprocess.run(["ssh", "-i", str(paths.lab_key(lab.root)), "-o", "BatchMode=yes",
                           "-o", f"UserKnownHostsFile={paths.lab_known_hosts(lab.root)}",
                           "-o", "StrictHostKeyChecking=yes", "-p", str(host.port), f"root@{host.address}", command],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def volume(lab):
    lab.reset([POD])
    # mode=755: fleet puts the venv only on a volume other users cannot write (a tmpfs is 1777 by default)
    plain_ssh(lab, "mkdir -p /workspace && mount -t tmpfs -o size=20g,mode=755 fleet-volume /workspace")
    yield
    lab.reset([POD])


def test_the_first_pod_section_followed_in_an_empty_directory(lab, volume, isolated_home, tmp_path):
    commands = readme_commands()
    assert [c.split()[1] for c in commands] == ["bootstrap", "facts", "apply", "apply", "forget"], commands
    address = lab.inventory.hosts[POD].address
    seen = {}
    for line in commands:
        argv = shlex.split(line)[1:]
        if argv[0] == "bootstrap":
            argv[1] = f"ssh root@{address} -p 22 -i {paths.lab_key(lab.root)}"
            argv += ["--keyring-pins", str(paths.lab_keyring_pins(lab.root)), "--set", "verify_perf=false"]
        if argv[0] == "forget":
            # the pod is returned: first everything else the section says about it is asked of the pod itself
            _asked_over_plain_ssh(lab)
        code, out, err = fleet(tmp_path, argv)
        assert code == 0, f"{line}\n{out[-3000:]}\n{err[-3000:]}"
        seen[line] = out
        if os.environ.get("FLEET_README_CAPTURE"):   # where the README's outputs are pasted from
            with open(os.environ["FLEET_README_CAPTURE"], "a", encoding="utf-8") as capture:
                capture.write(f"$ {line}\n{err}{out}\n")
    bootstrap, facts, check, apply, forget = (seen[c] for c in commands)
    home = isolated_home / ".config" / "fleet"
    # the summary is built from the variables the apply used: the volume's venv, not fleet's default
    assert "/workspace/venv/bin/python" in bootstrap and "/opt/fleet/venv" not in bootstrap, bootstrap
    assert "added to ~/.config/fleet/pods.yaml as pod-a" in " ".join(bootstrap.split())
    assert re.search(r"^  next +fleet apply --limit pod-a$", bootstrap, re.M), bootstrap
    assert "pod-a" in facts and "/workspace/venv" in facts
    assert "changed" not in check.split("recap", 1)[0] or "would change" in check
    assert re.search(r"^pod-a\s+\d+\s+0\s+0\s", apply, re.M), apply        # converged: zero changes, zero failed
    assert "removed its entry" in forget
    # where the person stood: nothing written; the pods, facts and keys live in the user's config
    assert list(tmp_path.iterdir()) == []
    assert "pod-a" not in (home / "pods.yaml").read_text()


def _asked_over_plain_ssh(lab) -> None:
    """What the README promises of the pod, asked the way a person would: python3 and torch in a plain `ssh host
    cmd`, the toolkit's nvcc in a login shell."""
    said = plain_ssh(lab, "python3 -c 'import sys, torch; print(sys.executable, torch.cuda.is_available())'")
    assert said.split() == ["/workspace/venv/bin/python3", "True"], said
    assert "release 13.0" in plain_ssh(lab, "bash -lc 'nvcc --version'")
