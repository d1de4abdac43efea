"""A failed task names what it needs (issue 38), read from the tools' own words: apt's, dpkg's, pip's, uv's."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fleet.connection.parallel import Outcome
from fleet.engine.plan import TaskReport
from fleet.engine.report import HostReport
from fleet.env import Environment
from fleet.report import Reporter
from fleet.report.apply import fix_for, print_apply

# Lines as the tools print them (apt 2.7 on Ubuntu 24.04, pip 24, uv 0.13).
CASES = [
    ("apply failed (exit 100): E: Unable to locate package cuda-toolkit-13-9", "not offered to this host"),
    ("apply failed (exit 100): W: Failed to fetch https://developer.download.nvidia.com/compute/cuda/repos/"
     "ubuntu2404/x86_64/InRelease  Temporary failure resolving 'developer.download.nvidia.com'", "cannot reach"),
    ("apply failed (exit 100): W: GPG error: ... NO_PUBKEY A4B469963BF863CC", "key is missing or expired"),
    ("apply failed (exit 100): E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct "
     "the problem.", "broken state"),
    ("apply failed (exit 1): ERROR: No matching distribution found for torch==2.99.0", "not offered"),
    ("apply failed (exit 1): error: No solution found when resolving dependencies", "not offered"),
    ("apply failed (exit 28): only 3 GB free at /opt; 20 GB needed: free space", "disk is full"),
    ("not run: it needs 'torch: install torch', which did not succeed", "fix the task it needs"),
]


@pytest.mark.parametrize("reason, says", CASES)
def test_each_failure_names_its_fix(reason, says):
    assert says in fix_for(reason)


def test_the_fix_is_printed_under_each_failed_task():
    out = io.StringIO()
    reporter = Reporter(Environment(console=Console(file=out, width=300), err_console=Console(file=io.StringIO())))
    report = HostReport("pod", False, (TaskReport("cuda_toolkit", "CUDA 13.0", "failed", CASES[0][0]),
                                       TaskReport("torch", "torch", "failed", CASES[-1][0])))
    print_apply(reporter, {"pod": Outcome("pod", value=report)}, json_out=False, show_diff=False, check=False)
    lines = out.getvalue().splitlines()
    fixes = [line for line in lines if line.strip().startswith("fix:")]
    assert len(fixes) == 2 and "not offered" in fixes[0] and "fix the task it needs" in fixes[1], lines


# Issue 50: a class of its own for each, with the exact command for the host (the default inventory not named).
CLASSES = [
    ("connection lost during this task", "was lost mid-apply", "`fleet apply --limit pod-a`"),
    ("not run: the connection was lost", "was lost mid-apply", "`fleet forget pod-a`"),
    ("apply failed (exit 1): sha256 of https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
     "cuda-keyring_1.1-1_all.deb is 0f3b, expected d93190d5; refusing it", "not the one fleet pins",
     "cuda_keyring_pins"),
    ("verify failed: torch_imports: ModuleNotFoundError: No module named 'torch'", "gone from pod-a's venv",
     "`fleet apply --limit pod-a` installs it again"),
    ("verify failed: torch_installed: no torch in /opt/fleet/venv/bin/python", "gone from pod-a's venv",
     "`fleet apply --limit pod-a`"),
    ("verify is stale: torch changed since it passed", "has changed since it passed", "`fleet verify --limit pod-a`"),
    ("apply failed (exit 1): ERROR: No matching distribution found for torch==2.99.0", "not offered",
     "--set NAME=VALUE"),
]


@pytest.mark.parametrize("reason, says, command", CLASSES)
def test_each_failure_class_has_its_own_fix_with_the_command(reason, says, command, isolated_home, monkeypatch):
    monkeypatch.delenv("FLEET_INVENTORY", raising=False)
    fix = fix_for(reason, "pod-a", str(isolated_home / ".config" / "fleet" / "pods.yaml"))
    assert says in fix and command in fix, fix
    # another inventory is named in the command, as the person must type it
    assert "`fleet apply team.yaml --limit pod-a`" in fix_for("connection lost during this task", "pod-a", "team.yaml")


def test_a_lost_connection_is_one_fix_per_host_not_one_per_task():
    out = io.StringIO()
    reporter = Reporter(Environment(console=Console(file=out, width=300), err_console=Console(file=io.StringIO())))
    tasks = (TaskReport("cuda_toolkit", "CUDA 13.0", "failed", "connection lost during this task"),
             TaskReport("torch", "torch", "failed", "connection lost during this task"),
             *(TaskReport("env_hooks", f"hook {n}", "failed", "not run: the connection was lost") for n in range(3)))
    print_apply(reporter, {"pod": Outcome("pod", value=HostReport("pod", False, tasks))}, json_out=False,
                show_diff=False, check=False)
    fixes = [line for line in out.getvalue().splitlines() if line.strip().startswith("fix:")]
    assert len(fixes) == 1 and "`fleet apply --limit pod`" in fixes[0], out.getvalue()
