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
