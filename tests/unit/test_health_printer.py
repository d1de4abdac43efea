"""`fleet health` as a person reads it (issue 50): on a terminal each host's verdict with its findings and its
keep-or-return advice under it, wrapped at words, so a GPU's UUID and bus id stay whole (the table's findings column
folded the UUID at 80 columns beside a longer host name); in a pipe the tab-separated table, one line per host."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fleet.connection.parallel import Outcome
from fleet.decide.health import Finding, HealthVerdict
from fleet.env import Environment
from fleet.report import Reporter
from fleet.report.health import print_verdicts

UUID = "GPU-5c1f2a3b-8d4e-4f6a-9b7c-0d1e2f3a4b5c"
BUS = "00000000:2A:00.0"
NAME = "runpod-h100-sxm-a"


def shown(width: int, terminal: bool) -> str:
    finding = Finding("degraded", 1, "enforced.power.limit", "400.00 W", "the GPU is capped below its default",
                      "the provider's setting", uuid=UUID, bus=BUS, renter="keep it or return it")
    verdicts = {NAME: HealthVerdict("degraded", "degraded: GPU 1", gpus=2, findings=[finding]),
                "pod-b": HealthVerdict("healthy", "healthy: 8 GPU(s)", gpus=8)}
    outcomes = {name: Outcome(name, remote_commands=1, seconds=0.3) for name in verdicts}
    out = io.StringIO()
    env = Environment(console=Console(file=out, width=width, force_terminal=terminal, color_system=None),
                      err_console=Console(file=io.StringIO(), width=width))
    print_verdicts(Reporter(env), outcomes, verdicts)
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_on_a_terminal_the_uuid_and_bus_id_stay_whole_and_every_host_says_keep_or_return(width):
    text = shown(width, terminal=True)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), text
    assert any(f"GPU 1 ({UUID}," in line for line in lines), text          # copyable as it is
    assert any(BUS in line for line in lines), text
    words = " ".join(text.split())
    assert f"{NAME} degraded, 2 GPU(s) GPU 1 ({UUID}, bus {BUS}): enforced.power.limit=400.00 W" in words, words
    assert "keep it if your job can live with this" in words and "pod-b healthy, 8 GPU(s)" in words
    assert "keep it: no GPU fault found" in words


def test_in_a_pipe_one_tab_separated_line_per_host():
    lines = shown(40, terminal=False).splitlines()
    rows = [line.split("\t") for line in lines if line.startswith((NAME, "pod-b"))]
    assert [row[:3] for row in rows] == [[NAME, "degraded", "2"], ["pod-b", "healthy", "8"]], lines
    assert f"GPU 1 ({UUID}, bus {BUS})" in rows[0][3] and "keep it" in rows[1][3], rows
