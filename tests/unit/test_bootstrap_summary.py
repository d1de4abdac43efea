"""bootstrap's summary: drawn (a rule, aligned keys, colour) on a terminal; plain lines in a pipe or a file,
as every command's piped output is (fleet/report/__init__.py Reporter.plain): no box drawing, no colour, no padding."""

import io
from pathlib import Path

import pytest
from rich.console import Console

from fleet.workflows.bootstrap import BootstrapResult
from fleet.workflows.ssh_line import parse_target
from fleet.report.bootstrap import print_result
from fleet.engine import HostReport, TaskReport
from fleet.env import Environment
from fleet.report import Reporter


def result(ok: bool = True) -> BootstrapResult:
    report = HostReport("pod-a", check_mode=False, tasks=[
        TaskReport("cuda_toolkit", "install cuda-toolkit-13-0", "changed", "not installed"),
        TaskReport("torch", "pip install torch", "changed" if ok else "failed",
                   "missing" if ok else "apply failed (exit 1): ERROR: No matching distribution found for torch==9"),
        TaskReport("cutlass", "CUTLASS", "changed" if ok else "failed",
                   "missing" if ok else "apply failed (exit 28): only 3 GB free at /opt; 20 GB needed"),
        TaskReport("verify", "verify", "ok", "in state")])
    facts = {"platform": "x86_64-dgpu", "gpus": [{"name": "NVIDIA H100 80GB HBM3"}],
             "driver": {"version": "570.133.20"},
             "verify": {"passed": ok, "summary": "torch 2.11.0+cu130 on H100: matmul ok"}}
    return BootstrapResult("pod-a", Path("inventories/pods.yaml"), parse_target("ssh root@203.0.113.10 -p 17322"),
                           added=True, host_key="accepted ssh-ed25519 SHA256:abc",
                           phases={"connect": 1.2, "apply": 40.0},
                           facts=facts, report=report, error=None if ok else "pod-a: torch failed",
                           remote_commands=4, seconds=41.2)


def printed(terminal: bool, ok: bool = True) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=120, force_terminal=terminal, soft_wrap=True),
                      err_console=Console(file=err, width=120, soft_wrap=True))
    print_result(Reporter(env), result(ok), json_out=False)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("ok", [True, False])
def test_piped_summary_is_plain_lines(ok):
    out, err = printed(terminal=False, ok=ok)
    assert "\x1b" not in out and not set(out) & set("─━│┃╭╮╰╯")
    lines = out.splitlines()
    assert lines[0] == ("== bootstrap pod-a verify passed" if ok else "== bootstrap pod-a FAILED")
    assert "inventory: added to inventories/pods.yaml as pod-a" in lines
    assert "changed: 3 task(s)" in lines if ok else "changed: 1 task(s)" in lines
    assert "  cuda_toolkit: install cuda-toolkit-13-0" in lines
    assert "connect: ssh root@203.0.113.10 -p 17322" in lines
    assert "phases: connect 1.2s · apply 40.0s · total 41.2s · 4 remote commands" in lines
    assert all(line == line.rstrip() and "  " not in line.lstrip() for line in lines), out   # no padding
    assert ("pod-a: torch failed" in err) == (not ok)
    if not ok:   # every failed task, not only the first, each with what it needs
        assert "failed: torch: pip install torch" in lines and "failed: cutlass: CUTLASS" in lines, out
        fixes = [line for line in lines if line.startswith("  fix: ")]
        assert len(fixes) == 2 and "not offered" in fixes[0] and "disk is full" in fixes[1], out


def test_terminal_summary_keeps_its_rule_and_aligned_keys():
    out, _ = printed(terminal=True)
    assert "─" in out and "\x1b[" in out                  # a rule, and colour
    assert "inventory" in out and "connect" in out and "  next       fleet apply" in out.replace("\x1b[1m", "").replace(
        "\x1b[0m", "")
