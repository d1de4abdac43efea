"""The HTML facts report as a person sees it: rendered by headless Chromium (Debian's `chromium`, installed by
scripts/setup.sh), a screenshot that shows something, and the DOM the browser built from the page."""

import json
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fleet.report import compare
from fleet.report import html
from fleet.record import store

DATA = Path(__file__).resolve().parents[1] / "data"
HOSTILE = "<img src=x onerror=alert(1)>"


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "chromium is not installed: run scripts/setup.sh (it installs Debian's chromium package)"
    return path


def browse(page: Path, *args: str, tmp: Path) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root, where Chromium refuses its sandbox; the page is our own, with no script.
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp / 'chromium-profile'}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, compare.Comparison]:
    h100 = json.loads((DATA / "h100-device" / "h100-device.json").read_text())
    h100["system"]["hostname"] = HOSTILE
    records = {"h100-device": h100, "a100-470": json.loads((DATA / "records" / "a100-470.json").read_text())}
    comparison = compare.compare(records)
    ages = {name: store.describe_age(store.age_seconds(record)) for name, record in records.items()}
    path = tmp_path_factory.mktemp("report") / "facts.html"
    path.write_text(html.render(comparison, records, ages, generated="2026-11-22T12:00:00+00:00", version="test"))
    return path, comparison


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw (filtered) scanlines of a PNG, read with the standard library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_chromium_renders_a_screenshot_with_content(page, tmp_path):
    path, _ = page
    shot = tmp_path / "facts.png"
    result = browse(path, "--window-size=1280,1400", f"--screenshot={shot}", tmp=tmp_path)
    assert shot.is_file(), result.stderr[-2000:]
    width, height, raw = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 1400)
    # Text, table lines and highlighted rows: many distinct byte values, not a blank or single-colour page.
    assert len(set(raw)) > 64 and shot.stat().st_size > 20_000


class _Rows(HTMLParser):
    """The rows of one table (by id) in the browser's DOM: [(tr class, [cell texts])]."""

    def __init__(self, table_id: str):
        super().__init__()
        self.table_id, self.inside, self.rows, self.headers = table_id, False, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.inside = attrs.get("id") == self.table_id
        elif self.inside and tag == "tr":
            self.rows.append((attrs.get("class"), []))
        elif self.inside and tag in ("td", "th"):
            self.rows[-1][1].append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False

    def handle_data(self, data):
        if self.inside and self.rows and self.rows[-1][1]:
            self.rows[-1][1][-1] += data


def dom(page_path: Path, tmp: Path, *args: str) -> str:
    result = browse(page_path, *args, "--dump-dom", tmp=tmp)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


def test_the_dom_has_hosts_side_by_side_by_section_differing_rows_first(page, tmp_path):
    path, comparison = page
    parser = _Rows("facts")
    parser.feed(dom(path, tmp_path))
    header, *rows = parser.rows
    assert header[1] == ["fact", "h100-device", "a100-470"]
    sections, seen = [], []
    for css, cells in rows:
        if css == "group":
            sections.append((cells[0].split(":")[0], []))
        else:
            sections[-1][1].append((css, cells[0]))
            seen.append(cells[0])
    assert sorted(seen) == sorted(row.path for row in comparison.rows)          # every fact, once
    for name, facts in sections:
        assert all(path.split(".")[0] == name for _, path in facts), name       # under its own section
        kinds = [css for css, _ in facts]
        assert kinds == sorted(kinds, key=lambda k: k != "differs"), name      # in each, what differs first
    assert len({name for name, _ in sections}) == len(sections)
    # The hostile value is text in a cell, not an element the browser built.
    assert any(cells[1] == HOSTILE for _, cells in rows if cells and cells[0] == "system.hostname")


def test_the_dom_shows_verify_perf_and_record_age_per_host(page, tmp_path):
    path, _ = page
    text = dom(path, tmp_path)
    assert "<img" not in text.lower()
    parser = _Rows("verify")
    parser.feed(text)
    rows = {cells[0]: cells[1:] for _, cells in parser.rows[1:]}
    assert rows["verify"] == ["passed", "not run"]
    assert rows["matmul bf16 TFLOP/s"] == ["783.4", "-"] and rows["attention TFLOP/s"] == ["522.7", "-"]
    # times in words and in local time with its zone, as of when the page was made (its "generated")
    assert all(re.fullmatch(r"\d+ (minute|hour|day)s? ago, \d{4}-\d\d-\d\d \d\d:\d\d \S+", age) for age in rows["record"]), \
        rows["record"]


_MEASURE = """<script>
addEventListener("load", () => {
  const cells = [...document.querySelectorAll("#facts td")];
  const names = [...document.querySelectorAll("#facts th.fact")];
  const lines = n => { const r = document.createRange(); r.selectNodeContents(n); return r.getClientRects().length; };
  const tops = n => { const r = document.createRange(); r.selectNodeContents(n);
                      return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; };
  // a name's pieces are the text between its <wbr>s: one that breaks itself is a name cut mid-word
  const pieces = names.flatMap(n => [...n.childNodes].filter(c => c.nodeType === 3 && c.textContent));
  const scrolls = [...document.querySelectorAll("div.scroll")].map(d => d.scrollWidth - d.clientWidth);
  document.body.dataset.narrowest = Math.min(...cells.map(c => c.getBoundingClientRect().width));
  document.body.dataset.tallestName = Math.max(...names.map(tops));
  document.body.dataset.brokenPieces = pieces.filter(p => lines(p) > 1).length;
  document.body.dataset.pageWidth = document.documentElement.scrollWidth;
  document.body.dataset.tableOverflow = Math.max(...scrolls);
});
</script>"""


def measured(page: Path, tmp: Path, width: int) -> dict[str, float]:
    """What the browser measured on a copy of the page with the probe above, at `width` pixels."""
    probed = tmp / f"probed-{width}.html"
    probed.write_text(page.read_text().replace("</body>", _MEASURE + "</body>"))
    text = dom(probed, tmp, f"--window-size={width},1000", "--virtual-time-budget=2000")
    found = dict(re.findall(r'data-(narrowest|tallest-name|broken-pieces|page-width|table-overflow)="([\d.-]+)"',
                            text))
    assert len(found) == 5, text[:500]
    return {name: float(value) for name, value in found.items()}


@pytest.fixture(scope="module")
def four_platforms(tmp_path_factory) -> Path:
    """Thor, Spark and two H100 pods (records captured from them): nearly every fact differs."""
    records = {name: json.loads((DATA / "records" / f"{name}.json").read_text())
               for name in ("thor", "spark", "h100-pod-570", "h100-pod-580-compat")}
    comparison = compare.compare(records)
    ages = {name: store.describe_age(store.age_seconds(record)) for name, record in records.items()}
    path = tmp_path_factory.mktemp("report4") / "facts.html"
    path.write_text(html.render(comparison, records, ages, generated="2026-11-22T12:00:00+00:00", version="test"))
    return path


def test_at_800_pixels_values_keep_their_width_and_names_their_line(four_platforms, tmp_path):
    """Four platforms in an 800-pixel window: the screenshot shows the page, and (measured by the browser, with a
    probe added to a copy of the page) no value column is squeezed to breaking text a character a line, a fact's
    name breaks only at its dots, and the page itself does not grow sideways: the facts table scrolls within it. Only
    values apart from a row's most shared one are marked: not every row of four platforms."""
    path = four_platforms
    shot = tmp_path / "facts-800.png"
    result = browse(path, "--window-size=800,1000", f"--screenshot={shot}", tmp=tmp_path)
    assert shot.is_file(), result.stderr[-2000:]
    width, height, raw = png_pixels(shot.read_bytes())
    assert (width, height) == (800, 1000) and len(set(raw)) > 64
    found = measured(path, tmp_path, 800)
    assert found["narrowest"] >= 150, found        # 12em of monospace: words, not letters, per line
    assert found["broken-pieces"] == 0, found      # a name wraps at its dots only, never inside a word
    assert found["page-width"] <= 800, found       # the page does not grow sideways: the table scrolls in it
    differing = re.findall(r'<tr class="differs">.*?</tr>', path.read_text())
    marked = [row for row in differing if 'class="odd"' in row]
    assert 0 < len(marked) < len(differing), (len(marked), len(differing))


@pytest.fixture(scope="module")
def four_lab_hosts(tmp_path_factory) -> Path:
    """Today's facts of the lab's four hosts, each converged and verified (tests/data/records/lab-2026-11-29: 455
    facts, names up to 76 characters such as shells.interactive.pythons./opt/fleet/venv/bin/python3.externally_managed),
    the page made half an hour after the last record was gathered, for a reader in Berlin."""
    from zoneinfo import ZoneInfo

    folder = DATA / "records" / "lab-2026-11-29"
    records = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    comparison = compare.compare(records)
    assert len(records) == 4 and max(len(r.path) for r in comparison.rows) >= 75
    path = tmp_path_factory.mktemp("report-lab") / "facts.html"
    path.write_text(html.render(comparison, records, {}, generated="2026-11-29T02:50:00+00:00", version="test",
                                zone=ZoneInfo("Europe/Berlin")))
    return path


def test_four_hosts_read_at_1400_pixels_without_scrolling_sideways(four_lab_hosts, tmp_path):
    """Four hosts at 1,400 px (the page needed about 2,500 before): the screenshot is the window's width, nothing
    scrolls sideways (neither the page nor a table within it), no value column is squeezed to a few letters a
    line, a fact name of 76 characters wraps at its dots and slashes only, within 3 lines; the legend for the
    highlight is on the page, and the times are in words with the reader's local time and zone."""
    shot = tmp_path / "facts-1400.png"
    result = browse(four_lab_hosts, "--window-size=1400,1000", f"--screenshot={shot}", tmp=tmp_path)
    assert shot.is_file(), result.stderr[-2000:]
    width, height, raw = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 1000) and len(set(raw)) > 64
    found = measured(four_lab_hosts, tmp_path, 1400)
    assert found["page-width"] <= 1400 and found["table-overflow"] <= 0, found
    assert found["narrowest"] >= 150 and found["broken-pieces"] == 0 and found["tallest-name"] <= 3, found
    text = dom(four_lab_hosts, tmp_path, "--window-size=1400,1000")
    legend = re.sub(r"<[^>]+>", " ", text[text.index('id="legend"'):text.index("</dl>", text.index('id="legend"'))])
    assert "the hosts differ in this fact" in legend and "apart from the one most hosts share" in legend
    parser = _Rows("verify")
    parser.feed(text)
    rows = {cells[0]: cells[1:] for _, cells in parser.rows[1:]}
    assert rows["verify"] == ["passed"] * 4
    # gathered 02:19-02:20 UTC, the page made at 02:50 UTC: 30 minutes ago, 03:19-03:20 in Berlin (CET)
    assert all(re.fullmatch(r"(29|30|31) minutes ago, 2026-11-29 03:(19|20) CET", age) for age in rows["record"]), \
        rows["record"]
    assert "generated 2026-11-29 03:50 CET" in text
