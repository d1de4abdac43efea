"""Small words in a pipe (issue 38): `fleet decide`'s grid has no empty header row, and counts agree with their
noun ("1 dir", not "1 dirs")."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"


def decide_piped(record: str) -> list[str]:
    out = io.StringIO()
    env = Environment(console=Console(file=out, width=100), err_console=Console(file=io.StringIO()))
    assert main(["decide", str(RECORDS / record)], env) == 0
    return out.getvalue().splitlines()


def test_decide_in_a_pipe_has_no_header_of_tabs_and_says_1_dir():
    lines = decide_piped("spark.json")
    assert lines[0] == "== spark ok" and lines[1].startswith("cuda\t"), lines[:3]
    assert not [line for line in lines if not line.strip("\t")], lines        # no row of empty cells
    assert next(line for line in lines if line.startswith("LD_LIBRARY_PATH\t")).split("\t")[1] == "1 dir"
    two = decide_piped("h100-pod-570.json")
    assert next(line for line in two if line.startswith("LD_LIBRARY_PATH\t")).split("\t")[1] == "2 dirs"
