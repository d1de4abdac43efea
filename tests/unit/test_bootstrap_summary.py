"""bootstrap's summary: drawn (a rule, aligned keys, colour) on a terminal; plain lines in a pipe or a file,
as every command's piped output is (fleet/report/__init__.py Reporter.plain): no box drawing, no colour, no padding."""

import io
import re
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


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_terminal_summary_never_breaks_a_word(width):
    """A value wraps at spaces inside its column; a word longer than that column (an inventory's path) takes a line
    of its own, whole, under the key, and one longer than the terminal starts at its first column (the terminal
    wraps that line alone); a sub-item's following lines keep its indent. rich's fold cut `cud`/`a_keyring_pins`."""
    from fleet.report.wrap import terminal_lines

    path = "/home/renter/" + "p" * (width - 27) + "/pods.yaml"     # 4 columns short of the terminal
    huge = "/" + "x" * (width + 10)
    rows = [("inventory", f"added to {path} as pod-a, with its vars: python_env=/workspace/venv, "
                          "cuda_keyring_pins for 1 URL(s)"),
            ("changed", "1 task(s)"), ("", "  cuda_toolkit: install cuda-toolkit-13-0 " + "and more words " * 6),
            ("next", f"fleet apply {path} --limit pod-a"), ("odd", f"a {huge} b")]
    lines = [line.plain for line in terminal_lines(rows, width)]
    assert all(len(line) <= width for line in lines if line.strip() != huge), lines
    assert sum(path in line for line in lines) == 2 and [line for line in lines if huge in line] == [huge], lines
    assert " ".join(lines).split() == " ".join(f"{k} {v}" for k, v in rows).split()   # every word, in order
    cont = [i for i, line in enumerate(lines) if "cuda_toolkit:" in line][0] + 1
    assert re.match(" {15}[a-z]", lines[cont]), lines           # the sub-item's indent: 2, the keys, 2, its own 2
    assert lines[0].startswith("  inventory  added to")


def test_a_terminal_summary_at_80_columns_keeps_a_long_path_whole():
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=80, force_terminal=True, color_system=None),
                      err_console=Console(file=err, width=80, soft_wrap=True))
    res = result()
    res.inventory = Path("/home/renter/projects/a-long-project-name/inventories/rented-h100-pods.yaml")
    print_result(Reporter(env), res, json_out=False)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), out.getvalue()
    assert sum(str(res.inventory) in line for line in lines) == 2, out.getvalue()   # `inventory` and `next`


@pytest.mark.parametrize("verdict", ["healthy", "degraded", "unknown", "none"])
def test_the_gpu_health_row_says_keep_or_return(verdict):
    """Every verdict in a renter's terms: keep the pod or return it (a pod to return stops bootstrap: its error names
    the provider's way out, fleet.decide.health.PROVIDER_WAY_OUT)."""
    from fleet.decide.health import ADVICE, HealthVerdict

    res = result()
    res.health = HealthVerdict(verdict, f"{verdict}: 1 GPU(s)")
    buf, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=buf, width=120), err_console=Console(file=err, width=120, soft_wrap=True))
    print_result(Reporter(env), res, json_out=False)
    row = next(line for line in buf.getvalue().splitlines() if line.startswith("GPU health: "))
    assert row == f"GPU health: {verdict}: 1 GPU(s); {ADVICE[verdict]}", row
    assert "keep it" in row, row


def test_every_verdict_has_keep_or_return_advice():
    from fleet.decide.health import ADVICE, PROVIDER_WAY_OUT, HealthVerdict

    for verdict in ("healthy", "degraded", "return", "unknown", "none"):
        advice = HealthVerdict(verdict, "x").advice
        assert advice and ("keep it" in advice or "return it" in advice), (verdict, advice)
    assert ADVICE["return"] == PROVIDER_WAY_OUT and PROVIDER_WAY_OUT.startswith("return it: ")
