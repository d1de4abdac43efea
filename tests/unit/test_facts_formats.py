"""`fleet facts` output for pipes and files: plain tables, --format md|csv|html, and no empty drift tables.

Records are real ones (tests/data): the H100 read off a real pod (with verify and perf figures) and an A100
on a 470 driver; one value is made hostile to prove every format escapes it.
"""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

DATA = Path(__file__).resolve().parents[1] / "data"
HOSTILE = '<script>alert("x")</script> | a,b'
LONG_PATH = "/opt/fleet/venv/lib/python3.12/site-packages/nvidia/cu13/lib:" + "/very/long/path/segment" * 5


@pytest.fixture
def cached(tmp_path):
    facts = tmp_path / "facts"
    facts.mkdir()
    h100 = json.loads((DATA / "h100-device" / "h100-device.json").read_text())
    h100["system"]["hostname"] = HOSTILE
    h100["env"]["LD_LIBRARY_PATH"] = LONG_PATH
    (facts / "h100-device.json").write_text(json.dumps(h100))
    shutil.copy(DATA / "records" / "a100-470.json", facts / "a100-470.json")
    inv = tmp_path / "fleet.yaml"
    inv.write_text("hosts:\n  h100-device: {address: 203.0.113.10}\n  a100-470: {address: 203.0.113.11}\n")
    return str(inv), h100


def fleet(*argv, width=80):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=width), err_console=Console(file=err, width=width))
    code = main(list(argv), env)
    return code, out.getvalue(), err.getvalue()


def test_table_in_a_pipe_is_tab_separated_with_nothing_wrapped_or_padded(cached):
    inv, h100 = cached
    code, out, _ = fleet("facts", inv, "--cached", "--all")
    assert code == 0
    lines = out.splitlines()
    assert not re.search(r"[│┃━─┏┗]", out)                  # no borders, no rules
    assert all(line == line.rstrip(" ") for line in lines)    # no padding (an empty last cell is a tab)
    header = lines[0]                                        # data only: no title line on stdout (issue 38)
    assert header.split("\t")[0] == "fact" and "h100-device" in header and "a100-470" in header
    # An 80-column pipe, yet the long path and the fact name stay whole on their row.
    row = next(line for line in lines if line.startswith("env.LD_LIBRARY_PATH\t"))
    assert row.split("\t")[1] == LONG_PATH
    assert all(len(line.split("\t")) == 3 for line in lines)


def test_markdown_lists_differing_rows_first_in_bold_and_escapes_pipes(cached):
    inv, _ = cached
    code, out, _ = fleet("facts", inv, "--cached", "--format", "md")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "| fact | h100-device | a100-470 |"
    assert lines[1] == "|---|---|---|"
    assert lines[2].startswith("| *record* | ")
    rows = [line for line in lines[3:] if line.startswith("| ")]
    bold = [line.startswith("| **") for line in rows]
    assert bold[0] and not bold[-1] and bold == sorted(bold, reverse=True)   # all differing rows come first
    hostname = next(line for line in rows if "system.hostname" in line)
    assert "\\| a,b" in hostname and hostname.count(" | ") == 2           # the value's | does not split the row


def test_csv_has_every_row_with_a_differs_column(cached):
    inv, h100 = cached
    code, out, _ = fleet("facts", inv, "--cached", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["fact", "differs", "h100-device", "a100-470"]
    assert rows[1][0] == "record" and rows[1][2].endswith("ago")
    flags = [row[1] for row in rows[2:]]
    assert flags == sorted(flags, reverse=True) and "yes" in flags and "no" in flags
    assert ["system.hostname", "yes", HOSTILE, next(r[3] for r in rows if r[0] == "system.hostname")] in rows


def test_html_is_self_contained_and_escapes_every_value(cached, tmp_path):
    inv, _ = cached
    code, _, err = fleet("facts", inv, "--cached", "--format", "html", "-o", str(tmp_path / "facts.html"))
    assert code == 0, err
    page = (tmp_path / "facts.html").read_text()
    assert page.startswith("<!doctype html>")
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert not re.search(r"\b(src|href)=|url\(|@import|https?://", page.split("<body>")[0])   # no assets
    assert not re.search(r"<(img|link|script|iframe)\b", page)
    # Verify and its perf figures per host: the H100's real numbers, "not run" for the A100.
    verify = page[page.index('id="verify"'):page.index('id="facts"')]
    assert "783.4" in verify and "522.7" in verify and "not run" in verify and "7/7 passed" in verify


def test_drift_with_no_change_prints_a_line_not_an_empty_table(cached, tmp_path):
    inv, _ = cached
    facts = tmp_path / "facts"
    for name in ("h100-device", "a100-470"):
        shutil.copy(facts / f"{name}.json", facts / f"{name}.prev.json")
    code, out, _ = fleet("facts", inv, "--cached", "--drift")
    assert code == 0
    assert "h100-device: no change since the previous record" in out
    assert "0 changes" not in out
