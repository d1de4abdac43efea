"""The history store's answers as a person reads them (`fleet facts --where/--failed/--stale/--history/--since`):
one table per question. Every value is remote text (a pod's report carries what it likes): each cell goes
through terminal_safe and Rich's escape, so an escape sequence or a [markup] tag prints as the characters it is.
"""

from __future__ import annotations

import time

from rich.markup import escape
from rich.table import Table

from fleet.record.store import describe_age
from fleet.report import terminal_safe

_STATUS_STYLE = {"ok": "green", "failed": "red", "unreachable": "red", "refused": "red", "expired": "magenta"}


def cell(value, limit: int = 80) -> str:
    """One value for a cell: "-" for none, yes/no, cut to `limit` characters, escaped."""
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    else:
        text = str(value)
    text = terminal_safe(text).replace("\n", " ")
    return escape(text if len(text) <= limit else text[:limit - 1] + "…")


def _status(status, expired: bool = False) -> str:
    shown = "expired" if expired else (status or "-")
    style = _STATUS_STYLE.get(shown)
    return f"[{style}]{cell(shown)}[/{style}]" if style else cell(shown)


def hosts_table(rows, where=(), *, now: float | None = None) -> Table:
    now = now or time.time()
    table = Table(title=f"{len(rows)} host(s)", title_justify="left")
    for name in ("host", "status", "last seen", "run", "verify", "health", "driver", *(w.text for w in where)):
        table.add_column(escape(name), overflow="fold")
    for row in rows:
        table.add_row(cell(row.host), _status(row.status, row.expired), cell(describe_age(now - row.last_seen)),
                      cell(row.kind), cell(row.shown.get("verify")), cell(row.shown.get("health")),
                      cell(row.shown.get("driver")), *(cell(row.values.get(w.text)) for w in where))
    return table


def history_table(host: str, rows) -> Table:
    table = Table(title=f"{cell(host)}: {len(rows)} report(s) with a change", title_justify="left")
    for name in ("at", "run", "status", "verify", "health", "driver", "what changed"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(cell(row["at"]), cell(row["kind"]), _status(row["status"]), cell(row.get("verify")),
                      cell(row.get("health")), cell(row.get("driver")), _changes(row["changes"], first=row is rows[0]))
    return table


def since_table(entries, since: str) -> Table:
    table = Table(title=f"{len(entries)} host(s) changed since {cell(since)}", title_justify="left")
    for name in ("host", "reports", "last", "status", "what changed"):
        table.add_column(name, overflow="fold")
    for entry in entries:
        table.add_row(cell(entry["host"]), str(entry["reports"]), cell(entry["last_at"]), _status(entry["status"]),
                      "first report" if entry["first_report"] and not entry["changes"]
                      else _changes(entry["changes"]))
    return table


def _changes(changes, *, first: bool = False, most: int = 4) -> str:
    if not changes:
        return "first report" if first else "status or exit"
    shown = [f"{cell(c['path'], 60)}: {cell(c['before'], 40)} -> {cell(c['after'], 40)}" for c in changes[:most]]
    more = f" (+{len(changes) - most} more)" if len(changes) > most else ""
    return "; ".join(shown) + more


class HistoryPrinter:
    """Prints one HistoryAnswer (fleet/workflows/history.py) in the form asked: a table, --json, or a report."""

    def __init__(self, reporter, view):
        self.reporter, self.env, self.view = reporter, reporter.env, view   # view: fleet.report.facts.FactsView

    def finish(self, answer) -> None:
        import json

        if answer.records is not None:
            self._export(answer)
        elif self.view.json:
            # JSON escapes every control character (ensure_ascii: C1 ones too): a report's text stays data
            self.env.console.file.write(json.dumps(answer.doc, indent=2, ensure_ascii=True, default=str) + "\n")
            self.env.console.file.flush()
        elif answer.kind == "history":
            self.reporter.print(history_table(answer.doc["host"], answer.rows))
        elif answer.kind == "since":
            self.reporter.print(since_table(answer.rows, answer.since))
        else:
            self.reporter.print(hosts_table(answer.rows, answer.where, now=answer.now))

    def _export(self, answer) -> None:
        """--format md|csv|html over the hosts a question selected: their newest records side by side, as
        `fleet facts --format` shows gathered ones (every remote string escaped by those printers)."""
        from datetime import datetime, timezone

        from fleet import __version__
        from fleet.atomic import write_atomic
        from fleet.report import compare, export, html, safe_value

        last = safe_value(answer.records)
        ages = {row.host: describe_age(answer.now - row.last_seen) + (" (expired)" if row.expired else "")
                for row in answer.rows}
        columns = [compare.Column(row.host, age=ages[row.host]) for row in answer.rows if row.host in last]
        comparison = compare.compare({c.host: last[c.host] for c in columns}, columns)
        if self.view.format == "html":
            text = html.render(comparison, last, ages, version=__version__,
                               generated=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        else:
            text = (export.markdown if self.view.format == "md" else export.csv_text)(comparison, ages)
        if self.view.output:
            path = self.view.output
            write_atomic(path, text.encode(), mode=0o644)
            self.reporter.progress("facts", f"{self.view.format} report of {len(columns)} host(s) written to {path}")
        else:
            self.env.console.file.write(text)
            self.env.console.file.flush()
