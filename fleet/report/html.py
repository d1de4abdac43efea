"""`fleet facts --format html`: one self-contained page a person opens to compare hosts.

Hosts side by side; first what each host proved (verify, its perf figures, the record's age), then every
fact with the rows where hosts differ first and highlighted, and a legend saying what the marks mean. No script,
no external asset (the page works offline and from a mail attachment); every value is HTML-escaped, since facts
carry text read off hosts. It fits the window it is read in: the columns share the page's width (four hosts
read at 1,400 px without scrolling sideways), a fact's name wraps at its dots, a long value anywhere; only where
each host's column would get less than 12em does the table scroll within the page. Times are in words and in the
reader's local time with its zone ("3 minutes ago, 2026-11-22 13:00 CET"), as of when the page was made.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from html import escape

from fleet.report.compare import Comparison

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.1em;margin:1.4em 0 .4em}
p.meta{color:#57606a;margin:0 0 1em}
div.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin-bottom:1em;width:100%;table-layout:fixed}
th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
thead th{background:#f6f8fa;position:sticky;top:0;overflow-wrap:anywhere}
th.fact{font-family:ui-monospace,monospace;font-weight:normal;position:sticky;left:0;background:#fff}
td{font-family:ui-monospace,monospace;overflow-wrap:anywhere}
td.odd{background:#fff8c5}
tr.differs th.fact::before{content:"\\2260\\a0";color:#9a6700}
tr.same td{color:#57606a}
tr.group th{background:#f6f8fa;font-weight:bold;position:sticky;left:0}
.pass{color:#1a7f37;font-weight:bold} .fail{color:#cf222e;font-weight:bold} .none{color:#57606a}
.stale{color:#9a6700} .down{color:#cf222e}
dl.legend{display:flex;flex-wrap:wrap;gap:.3em 1.5em;margin:0 0 .8em;color:#1b1f24}
dl.legend dt{font-family:ui-monospace,monospace;padding:0 .4em;border:1px solid #d0d7de}
dl.legend dd{margin:0 0 0 -1em} dt.odd{background:#fff8c5} dt.same{color:#57606a}
"""

# Verify rows of the summary: (label, how to read it off a record's verify).
_PERF = (("matmul bf16 TFLOP/s", "matmul_tflops"), ("matmul ms", "matmul_ms"),
         ("attention TFLOP/s", "attention_tflops"), ("attention ms", "attention_ms"),
         ("attention case", "attention_case"), ("GPU peak TFLOP/s", "peak_tflops"))
# verify's bandwidths (issue 36) against the platform row's floors
_BANDWIDTH = (("host to device GB/s", "h2d_gbs"), ("device to host GB/s", "d2h_gbs"), ("host floor GB/s", "host_floor_gbs"),
              ("device memory traffic GB/s", "d2d_traffic_gbs"), ("memory floor TB/s", "memory_floor_tbs"))


# a host's column gets at least this (em): narrower, values would break a few characters a line
_MIN_COLUMN_EM = 12.0
_CHAR_EM = 0.62          # one character of the monospace font, in em (DejaVu Sans Mono: 0.602)


def render(comparison: Comparison, records: dict[str, dict | None], ages: dict[str, str | None], *,
           generated: str, version: str, zone: tzinfo | None = None) -> str:
    """The page. `ages`: host -> "3m ago" (the record's age, where its record carries no time), `generated`: when
    the page was made (ISO 8601), the "now" of every "... ago" on it; `zone`: the reader's (default: this machine's
    local zone)."""
    hosts = [column.host for column in comparison.columns]
    clock = Clock(_parsed(generated) or datetime.now(timezone.utc), zone)
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>fleet facts: {escape(', '.join(hosts))}</title>", f"<style>{_CSS}{_widths(comparison)}</style></head><body>",
             "<h1>fleet facts</h1>",
             f'<p class="meta">{len(hosts)} host{"s" if len(hosts) != 1 else ""}, '
             f'{len(comparison.differing)} facts differ, {len(comparison.identical)} identical; '
             f"generated {escape(clock.local(clock.now))} by fleet {escape(version)}</p>",
             _summary(comparison, records, ages, clock), _facts(comparison), "</body></html>"]
    return "\n".join(parts) + "\n"


class Clock:
    """Times as a person reads them: "3 minutes ago, 2026-11-22 13:00 CET" (words from `now`, local time)."""

    def __init__(self, now: datetime, zone: tzinfo | None = None):
        self.now, self.zone = now, zone

    def local(self, when: datetime) -> str:
        shown = when.astimezone(self.zone)
        return f"{shown:%Y-%m-%d %H:%M} {shown.tzname() or shown.strftime('%z')}"

    def words(self, when: datetime) -> str:
        return f"{ago((self.now - when).total_seconds())}, {self.local(when)}"


def ago(seconds: float) -> str:
    """62 -> "1 minute ago", 7300 -> "2 hours ago"; under a minute "just now"; a time ahead of now "in the future"."""
    if seconds < -60:
        return "in the future (a clock ahead)"
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def _parsed(text) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(text or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _name(path: str) -> str:
    """A fact's name that may wrap after each dot and each slash (of a path inside it), and nowhere else (<wbr>)."""
    return ".<wbr>".join("/<wbr>".join(escape(bit) for bit in part.split("/")) for part in path.split("."))


def _widths(comparison: Comparison) -> str:
    """The page's column widths: the names' column wide enough for the longest part of a name (so names wrap at
    their dots and slashes only; up to 24em), each host's column sharing the rest, never under 12em (else the tables scroll)."""
    longest = max((len(bit) for r in comparison.rows for part in r.path.split(".") for bit in part.split("/")),
                  default=8)
    first = min(max(longest * _CHAR_EM + 2.5, 10.0), 24.0)
    return f"table{{min-width:{first + len(comparison.columns) * _MIN_COLUMN_EM:g}em}} col.name{{width:{first:g}em}}"


def _table(comparison: Comparison, table_id: str) -> str:
    return (f'<div class="scroll"><table id="{table_id}"><colgroup><col class="name">'
            + "<col>" * len(comparison.columns) + "</colgroup>")


def _head(comparison: Comparison, first: str) -> str:
    cells = "".join(f'<th scope="col">{escape(c.host)}</th>' for c in comparison.columns)
    return f'<thead><tr><th scope="col">{escape(first)}</th>{cells}</tr></thead>'


def _summary(comparison: Comparison, records, ages, clock: Clock) -> str:
    rows = [("record", [_age_cell(c, _age(records.get(c.host), ages.get(c.host), clock)) for c in comparison.columns]),
            ("GPU health", [_health_cell((records.get(c.host) or {}).get("health")) for c in comparison.columns]),
            ("verify", [_verify_cell((records.get(c.host) or {}).get("verify")) for c in comparison.columns])]
    verifies = {c.host: (records.get(c.host) or {}).get("verify") or {} for c in comparison.columns}
    rows.append(("verified", [escape(clock.words(_parsed(v["at"])) if _parsed(v.get("at")) else str(v.get("at") or "-"))
                              for v in verifies.values()]))
    rows.append(("checks", [_checks(v) for v in verifies.values()]))
    for label, key in _BANDWIDTH:
        values = [(v.get("bandwidth") or {}).get(key) for v in verifies.values()]
        if any(value is not None for value in values):
            rows.append((label, [escape("-" if value is None else str(value)) for value in values]))
    for label, key in _PERF:
        values = [(v.get("perf") or {}).get(key) for v in verifies.values()]
        if any(value is not None for value in values):
            rows.append((label, [escape("-" if value is None else str(value)) for value in values]))
    body = "".join(f'<tr><th class="fact" scope="row">{escape(label)}</th>'
                   + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>" for label, cells in rows)
    return (f'<h2>Verify</h2>{_table(comparison, "verify")}'
            f'{_head(comparison, "")}<tbody>{body}</tbody></table></div>')


def _age(record: dict | None, age: str | None, clock: Clock) -> str | None:
    """The record's age in words with its local time; the caller's age where the record carries no time."""
    when = _parsed((record or {}).get("gathered_at"))
    return clock.words(when) if when else age


def _health_cell(health: dict | None) -> str:
    """The GPUs' verdict (fleet/decide/health.py) and its reason: what, which GPU, NVIDIA's action."""
    verdict = (health or {}).get("verdict")
    if not verdict or verdict == "none":
        return '<span class="none">-</span>'
    css = {"healthy": "pass", "degraded": "stale", "return": "fail"}.get(verdict, "stale")
    shown = "return this pod" if verdict == "return" else verdict
    reason = health.get("reason") or ""
    return f'<span class="{css}">{escape(shown)}</span>' + (f"<br>{escape(reason)}" if verdict != "healthy" else "")


def _age_cell(column, age: str | None) -> str:
    when = escape(age) if age else "no record"
    if not column.reachable:
        return f'<span class="down">{escape(column.label)}</span> (last record {when})'
    return f'<span class="stale">{when}</span>' if column.age else when


def _verify_cell(verify: dict | None) -> str:
    if not verify:
        return '<span class="none">not run</span>'
    if verify.get("verdict") == "stale":   # passed only while its fingerprint holds: stale, and why
        was = "passed" if verify.get("was_passed") else "failed"
        why = "".join(f"<br>{escape(str(reason))}" for reason in verify.get("stale") or [])
        return f'<span class="stale">stale</span> (it {was} when it ran){why}'
    return '<span class="pass">passed</span>' if verify.get("passed") else '<span class="fail">failed</span>'


def _checks(verify: dict) -> str:
    checks = [c for c in verify.get("checks") or [] if isinstance(c, dict)]
    if not checks:
        return "-"
    passed = sum(1 for c in checks if c.get("passed"))
    failing = "".join(f'<br><span class="fail">{escape(str(c.get("name")))}</span>: {escape(str(c.get("detail")))}'
                      for c in checks if not c.get("passed"))
    return f"{passed}/{len(checks)} passed{failing}"


def _facts(comparison: Comparison) -> str:
    """Every fact, grouped by section (system, gpus, driver, ...), in each the rows where hosts differ first. In a
    row that differs, only the values apart from the one most hosts share are marked (none where every host has
    its own: four platforms side by side are not 92 alarms). The legend above says so. Only in a window too
    narrow for 12em a host does the table scroll sideways, the fact names staying in view, rather than breaking
    values a character a line."""
    def row(r, css: str) -> str:
        values = [r.values.get(c.host, "-") for c in comparison.columns]
        common = max(values, key=values.count)   # the first of the most shared values
        mark = css == "differs" and values.count(common) > 1
        cells = "".join(f'<td class="odd">{escape(v)}</td>' if mark and v != common else f"<td>{escape(v)}</td>"
                        for v in values)
        return f'<tr class="{css}"><th class="fact" scope="row">{_name(r.path)}</th>{cells}</tr>'

    span = len(comparison.columns) + 1
    sections: dict[str, list] = {}
    for r, css in [*((r, "differs") for r in comparison.differing), *((r, "same") for r in comparison.identical)]:
        sections.setdefault(r.path.split(".", 1)[0], []).append((r, css))
    body = []
    for name, rows in sections.items():
        differ = sum(1 for _, css in rows if css == "differs")
        body.append(f'<tr class="group" id="section-{escape(name)}"><th colspan="{span}">{escape(name)}: '
                    f'{len(rows)} fact{"s" if len(rows) != 1 else ""}, {differ} differ</th></tr>')
        body += [row(r, css) for r, css in rows]
    links = " ".join(f'<a href="#section-{escape(n)}">{escape(n)}</a>' for n in sections)
    table = _table(comparison, "facts")
    return (f'<h2>Facts</h2><p class="meta">{links}</p>{_LEGEND}{table}'
            f'{_head(comparison, "fact")}<tbody>{"".join(body)}</tbody></table></div>')


_LEGEND = ('<dl class="legend" id="legend"><dt>&#8800; name</dt><dd>the hosts differ in this fact</dd>'
           '<dt class="odd">value</dt><dd>this host\'s value is apart from the one most hosts share</dd>'
           '<dt class="same">value</dt><dd>grey: every host has the same value</dd></dl>')
