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
table{border-collapse:collapse;margin-bottom:1em}
th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
thead th{background:#f6f8fa;position:sticky;top:0}
th.fact{font-family:ui-monospace,monospace;font-weight:normal;white-space:nowrap}
td{font-family:ui-monospace,monospace;overflow-wrap:anywhere;max-width:34em}
tr.differs td,tr.differs th.fact{background:#fff8c5}
tr.differs th.fact::before{content:"\\2260 ";color:#9a6700}
tr.same td{color:#57606a}
tr.group th{background:#f6f8fa;font-weight:bold}
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
    return f'<h2>Verify</h2><table id="verify">{_head(comparison, "")}<tbody>{body}</tbody></table>'


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
    def row(r, css: str) -> str:
        cells = "".join(f"<td>{escape(r.values.get(c.host, '-'))}</td>" for c in comparison.columns)
        return f'<tr class="{css}"><th class="fact" scope="row">{escape(r.path)}</th>{cells}</tr>'

    span = len(comparison.columns) + 1
    body = [f'<tr class="group"><th colspan="{span}">{len(comparison.differing)} facts differ</th></tr>']
    body += [row(r, "differs") for r in comparison.differing]
    body.append(f'<tr class="group"><th colspan="{span}">{len(comparison.identical)} facts identical</th></tr>')
    body += [row(r, "same") for r in comparison.identical]
    return f'<h2>Facts</h2><table id="facts">{_head(comparison, "fact")}<tbody>{"".join(body)}</tbody></table>'
