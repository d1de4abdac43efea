"""`fleet facts --format md|csv`: the side-by-side comparison as Markdown or CSV (every row, differing first).

Pure: a Comparison (fleet.report.compare) in, text out. Markdown escapes `|` and line breaks in values so a
cell never splits the table, and HTML (`<`, `>`, `&`) and link brackets so a host's value never renders as a tag
or a `javascript:` link; CSV quotes as RFC 4180 (the csv module), says which rows differ, and puts `'` before a
cell that a spreadsheet would read as a formula (OWASP's CSV-injection rule: = + - @ tab CR first).
"""

from __future__ import annotations

import csv
import io

from fleet.report.compare import Comparison


def markdown(comparison: Comparison, ages: dict[str, str | None]) -> str:
    hosts = [column.host for column in comparison.columns]
    lines = ["| fact | " + " | ".join(_md(h) for h in hosts) + " |", "|---" * (len(hosts) + 1) + "|",
             "| *record* | " + " | ".join(_md(_age(c, ages.get(c.host))) for c in comparison.columns) + " |"]
    for row in comparison.differing:
        lines.append(f"| **{_md(row.path)}** | " + " | ".join(f"**{_md(row.values.get(h, '-'))}**" for h in hosts)
                     + " |")
    for row in comparison.identical:
        lines.append(f"| {_md(row.path)} | " + " | ".join(_md(row.values.get(h, "-")) for h in hosts) + " |")
    note = f"{len(comparison.differing)} facts differ (bold, first), {len(comparison.identical)} identical."
    return "\n".join(lines) + "\n\n" + note + "\n"


def csv_text(comparison: Comparison, ages: dict[str, str | None]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    hosts = [column.host for column in comparison.columns]
    writer.writerow(_cells(["fact", "differs", *hosts]))
    writer.writerow(_cells(["record", "", *(_age(c, ages.get(c.host)) for c in comparison.columns)]))
    for row in comparison.differing + comparison.identical:
        writer.writerow(_cells([row.path, "yes" if row.differs else "no", *(row.values.get(h, "-") for h in hosts)]))
    return out.getvalue()


def _age(column, age: str | None) -> str:
    when = age or "no record"
    return when if column.reachable else f"{column.label} (last record {when})"


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cells(values) -> list[str]:
    """OWASP CSV injection: a cell starting = + - @ tab or CR gets a leading ' (the lone "-" of "no value" is
    no formula and stays as it is)."""
    return [f"'{text}" if text.startswith(_FORMULA_START) and text != "-" else text for text in map(str, values)]


def _md(text: str) -> str:
    text = str(text).replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char in "|[]":
        text = text.replace(char, "\\" + char)
    return text.replace("\r", " ").replace("\n", "<br>")
