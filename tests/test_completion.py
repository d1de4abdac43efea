"""Shell completion (argcomplete): fleet answers the shell's protocol with subcommands, flags and, for --limit, the
inventory's host and group names; `fleet completion SHELL` prints code the shell accepts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

INVENTORY = """\
hosts:
  pod-570: {address: 127.0.0.13}
  pod-580: {address: 127.0.0.14}
  thor: {address: 127.0.0.11, key: ~/gone/id_ed25519}   # a key that is gone: completion still answers
groups:
  pods: {hosts: [pod-570, pod-580]}
"""


def candidates(line: str, tmp_path: Path, **extra_env: str) -> list[str]:
    out = tmp_path / "candidates"
    env = {**os.environ, "COMP_LINE": line, "COMP_POINT": str(len(line)), "_ARGCOMPLETE": "1",
           "_ARGCOMPLETE_IFS": "\n", "_ARGCOMPLETE_STDOUT_FILENAME": str(out), **extra_env}
    env.pop("FLEET_INVENTORY", None) if "FLEET_INVENTORY" not in extra_env else None
    done = subprocess.run([sys.executable, "-m", "fleet"], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout          # nothing but the candidates, and those to the shell's channel
    return sorted(c.strip() for c in out.read_text().split("\n") if c.strip())


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "pods.yaml"
    path.write_text(INVENTORY)
    return path


def test_subcommands_and_flags(tmp_path):
    assert candidates("fleet a", tmp_path) == ["apply"]
    assert {"bootstrap", "forget", "completion", "facts"} <= set(candidates("fleet ", tmp_path))
    assert "--detailed-exitcode" in candidates("fleet apply x.yaml --det", tmp_path)
    assert [c for c in candidates("fleet completion ", tmp_path) if not c.startswith("-")] == ["bash", "fish", "zsh"]


@pytest.mark.parametrize("typed, expected", [
    ("po", ["pod-570", "pod-580", "pods"]),
    ("pods,th", ["pods,thor"]),
    ("!pod-5", ["\\!pod-570", "\\!pod-580"]),      # bash would expand a bare ! from its history: escaped
    ("nothing", []),
])
def test_limit_completes_the_inventorys_hosts_and_groups(tmp_path, inventory, typed, expected):
    assert candidates(f"fleet apply {inventory} --limit {typed}", tmp_path) == expected


def test_limit_reads_fleet_inventory_when_the_line_names_none(tmp_path, inventory):
    assert candidates("fleet facts --limit th", tmp_path, FLEET_INVENTORY=str(inventory)) == ["thor"]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_printed_code_is_shell_code_that_registers_fleet(tmp_path, shell):
    done = subprocess.run([sys.executable, "-m", "fleet", "completion", shell], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "fleet" in done.stdout
    if shell == "bash":
        subprocess.run(["bash", "-n"], input=done.stdout, text=True, check=True)
        assert "complete " in done.stdout
