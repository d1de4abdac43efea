"""`fleet facts --format html`: one self-contained page a person opens to compare hosts.

Hosts side by side; first what each host proved (verify, its perf figures, the record's age), then every
fact with the rows where hosts differ first and highlighted. No script, no external asset (the page works
offline and from a mail attachment); every value is HTML-escaped, since facts carry text read off hosts.
"""

from __future__ import annotations

from html import escape

from fleet.report.compare import Comparison

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.1em;margin:1.4em 0 .4em}
p.meta{color:#57606a;margin:0 0 1em}
div.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin-bottom:1em}
th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
thead th{background:#f6f8fa;position:sticky;top:0}
th.fact{font-family:ui-monospace,monospace;font-weight:normal;white-space:nowrap;position:sticky;left:0;
background:#fff}
td{font-family:ui-monospace,monospace;overflow-wrap:break-word;min-width:12em;max-width:34em}
td.odd{background:#fff8c5}
tr.differs th.fact::before{content:"\\2260 ";color:#9a6700}
tr.same td{color:#57606a}
tr.group th{background:#f6f8fa;font-weight:bold;position:sticky;left:0}
.pass{color:#1a7f37;font-weight:bold} .fail{color:#cf222e;font-weight:bold} .none{color:#57606a}
.stale{color:#9a6700} .down{color:#cf222e}
"""

# Verify rows of the summary: (label, how to read it off a record's verify).
_PERF = (("matmul bf16 TFLOP/s", "matmul_tflops"), ("matmul ms", "matmul_ms"),
         ("attention TFLOP/s", "attention_tflops"), ("attention ms", "attention_ms"),
         ("attention case", "attention_case"), ("GPU peak TFLOP/s", "peak_tflops"))
# verify's bandwidths (issue 36) against the platform row's floors
_BANDWIDTH = (("host to device GB/s", "h2d_gbs"), ("device to host GB/s", "d2h_gbs"), ("host floor GB/s", "host_floor_gbs"),
              ("device memory traffic GB/s", "d2d_traffic_gbs"), ("memory floor TB/s", "memory_floor_tbs"))


def render(comparison: Comparison, records: dict[str, dict | None], ages: dict[str, str | None], *,
           generated: str, version: str) -> str:
    """The page. `ages`: host -> "3m ago" (the record's age), `generated`: when the page was made."""
    hosts = [column.host for column in comparison.columns]
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>fleet facts: {escape(', '.join(hosts))}</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>fleet facts</h1>",
             f'<p class="meta">{len(hosts)} host{"s" if len(hosts) != 1 else ""}, '
             f'{len(comparison.differing)} facts differ, {len(comparison.identical)} identical; '
             f"generated {escape(generated)} by fleet {escape(version)}</p>",
             _summary(comparison, records, ages), _facts(comparison), "</body></html>"]
    return "\n".join(parts) + "\n"


def _head(comparison: Comparison, first: str) -> str:
    cells = "".join(f'<th scope="col">{escape(c.host)}</th>' for c in comparison.columns)
    return f'<thead><tr><th scope="col">{escape(first)}</th>{cells}</tr></thead>'


def _summary(comparison: Comparison, records, ages) -> str:
    rows = [("record", [_age_cell(c, ages.get(c.host)) for c in comparison.columns]),
            ("GPU health", [_health_cell((records.get(c.host) or {}).get("health")) for c in comparison.columns]),
            ("verify", [_verify_cell((records.get(c.host) or {}).get("verify")) for c in comparison.columns])]
    verifies = {c.host: (records.get(c.host) or {}).get("verify") or {} for c in comparison.columns}
    rows.append(("verified at", [escape(str(v.get("at") or "-")) for v in verifies.values()]))
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
    return (f'<h2>Verify</h2><div class="scroll"><table id="verify">{_head(comparison, "")}<tbody>{body}</tbody>'
            "</table></div>")


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
    its own: four platforms side by side are not 92 alarms). The table scrolls sideways in a narrow window, the
    fact names staying in view, rather than breaking values a character a line."""
    def row(r, css: str) -> str:
        values = [r.values.get(c.host, "-") for c in comparison.columns]
        common = max(values, key=values.count)   # the first of the most shared values
        mark = css == "differs" and values.count(common) > 1
        cells = "".join(f'<td class="odd">{escape(v)}</td>' if mark and v != common else f"<td>{escape(v)}</td>"
                        for v in values)
        return f'<tr class="{css}"><th class="fact" scope="row">{escape(r.path)}</th>{cells}</tr>'

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
    return (f'<h2>Facts</h2><p class="meta">{links}</p><div class="scroll"><table id="facts">'
            f'{_head(comparison, "fact")}<tbody>{"".join(body)}</tbody></table></div>')
