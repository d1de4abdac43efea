"""Hosts side by side: one row per fact path, one column per host; what differs first. And drift.

Pure data here (compare, over fleet/facts/rows.py flatten) plus the two Rich renderings; the command decides what to print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.markup import escape
from rich.table import Table

from fleet.facts.rows import ABSENT, flatten

# Unique per host by nature: they would always "differ" in the table (they stay in records and drift).
TABLE_SKIP = re.compile(r"^gpus\.\d+\.uuid$")


@dataclass
class Row:
    path: str
    values: dict[str, str]           # host -> shown value
    differs: bool


@dataclass
class Column:
    host: str
    reachable: bool = True
    age: str | None = None           # "2h 5m ago" for a cached or stale record
    error: str | None = None
    label: str = "unreachable"       # what the header says when there are no fresh facts


@dataclass
class Comparison:
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)

    @property
    def differing(self) -> list[Row]:
        return [row for row in self.rows if row.differs]

    @property
    def identical(self) -> list[Row]:
        return [row for row in self.rows if not row.differs]


def compare(records: dict[str, dict | None], columns: list[Column] | None = None) -> Comparison:
    """Rows in first-seen order, differing rows first. A host with no record shows "-" everywhere."""
    columns = columns or [Column(host) for host in records]
    flat = {host: {path: value for path, value in flatten(records.get(host)).items() if not TABLE_SKIP.match(path)}
            for host in records}
    paths: dict[str, None] = {}
    for host_rows in flat.values():
        paths.update(dict.fromkeys(host_rows))
    with_data = [host for host in records if records.get(host)]
    rows = []
    for path in paths:
        values = {host: flat[host].get(path, ABSENT) for host in records}
        differs = len({values[host] for host in with_data}) > 1
        rows.append(Row(path, values, differs))
    rows.sort(key=lambda row: not row.differs)  # stable: keeps the record's order within each group
    return Comparison(columns, rows)


def render(comparison: Comparison, *, show_all: bool = False) -> Table:
    """The Rich table: differing rows highlighted, identical ones folded into a count unless show_all."""
    table = Table(show_lines=False)
    # A fact's name is never broken: on a narrow terminal the values fold instead.
    table.add_column("fact", style="bold", no_wrap=True)
    for column in comparison.columns:
        table.add_column(_header(column), overflow="fold", min_width=min(12, max(len(_header(column)), 6)))
    for row in comparison.differing:
        table.add_row(escape(row.path), *(_cell(row, column, "yellow") for column in comparison.columns))
    identical = comparison.identical
    if show_all:
        if comparison.differing and identical:
            table.add_section()
        for row in identical:
            table.add_row(escape(row.path), *(_cell(row, column, "dim") for column in comparison.columns))
    elif identical:
        table.caption = f"{len(identical)} identical facts folded (--all shows them)"
        table.caption_justify = "left"
    return table


def fits(comparison: Comparison, width: int) -> bool:
    """Whether the side-by-side table fits `width` columns with every fact name whole and each host a readable
    column (14 characters)."""
    names = max((len(row.path) for row in comparison.rows), default=4)
    return names + 4 + 17 * len(comparison.columns) <= width


def render_stacked(comparison: Comparison):
    """Every fact for a terminal too narrow for the side-by-side table: the fact's name on a line of its own,
    whole, then its value: one line when every host agrees ("all"), else a line per host."""
    from rich.console import Group
    from rich.text import Text

    parts = []
    hosts = max((len(c.host) for c in comparison.columns), default=3)
    for row in [*comparison.differing, *comparison.identical]:
        parts.append(Text(row.path, style="bold", no_wrap=True, overflow="ignore"))
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(no_wrap=True, style="dim", min_width=hosts + 2)
        grid.add_column(overflow="fold")
        values = {row.values.get(c.host, ABSENT) for c in comparison.columns}
        if len(values) == 1 and len(comparison.columns) > 1:
            grid.add_row("  all", escape(values.pop()))
        else:
            for column in comparison.columns:
                grid.add_row(f"  {escape(column.host)}", _cell(row, column, "yellow" if row.differs else "default"))
        parts.append(grid)
    return Group(*parts)


def _header(column: Column) -> str:
    name = f"[bold]{escape(column.host)}[/bold]"
    if not column.reachable:
        when = f"record {column.age}" if column.age else "no record"
        return f"{name}\n[red]{escape(column.label)}[/red] [dim]({escape(when)})[/dim]"
    if column.age:
        return f"{name}\n[dim]cached, {escape(column.age)}[/dim]"
    return name


def _cell(row: Row, column: Column, style: str) -> str:
    value = escape(row.values.get(column.host, ABSENT))
    if not column.reachable:
        style = "dim"  # last known values of a host we could not reach: shown, but not as news
    return f"[{style}]{value}[/{style}]"


def render_drift(host: str, changes: list[tuple[str, str, str]], *, since: str | None = None) -> Table:
    """Per host: fact, before, after."""
    title = f"{host}: {len(changes)} change{'s' if len(changes) != 1 else ''} since the previous record"
    table = Table(title=title + (f" ({since})" if since else ""), title_justify="left")
    table.add_column("fact", style="bold")
    table.add_column("before")
    table.add_column("after")
    for path, before, after in changes:
        table.add_row(escape(path), f"[red]{escape(before)}[/red]", f"[green]{escape(after)}[/green]")
    return table
