"""Hosts side by side: one row per fact path, one column per host; what differs first. And drift.

Pure data here (flatten, compare, drift) plus the two Rich renderings; the command decides what to print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.markup import escape
from rich.table import Table

from fleet.facts.readings import moves_on_its_own

# Bookkeeping that always differs, or detail already summarised elsewhere in the table.
SKIP = {"host", "gathered_at", "fleet_version", "probe.raw", "probe.notes", "library_sources", "system.disks",
        "torch.warnings", "cuda.compat.all", "system.mem_available_mb", "shells.home", "verify.cuda",
        "verify.perf.look", "verify_fingerprint", "verify.verdict", "verify.was_passed"}
# Unique per host by nature: they would always "differ" in the table (they stay in records and drift).
TABLE_SKIP = re.compile(r"^gpus\.\d+\.uuid$")
# Readings of a working GPU that move by the second (GPU health, issue 36), and the health's copy of each GPU's uuid:
# neither compared nor drift.
HEALTH_NOISE = re.compile(r"^health\.gpus\.\d+\.(power\.draw|clocks\.sm|uuid)$")
ABSENT = "-"


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


def show(value) -> str:
    """One cell: None -> "-", True -> "yes", ["sm_90", "sm_100"] -> "sm_90 sm_100"."""
    if value is None:
        return ABSENT
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " ".join(show(item) for item in value) if value else "none"
    return str(value)


def flatten(record: dict | None) -> dict[str, str]:
    """A record -> {"system.arch": "x86_64", "gpus.0.compute_cap": "9.0", "libraries.libcudss.so.0": "-", ...}.

    Nested dicts and lists of dicts are walked (gpus.0.name); lists of plain values become one cell.
    verify.checks is summarised as "3/4 passed" plus one row per failing check.
    """
    rows: dict[str, str] = {}
    _walk(record or {}, "", rows)
    return rows


def _walk(value, prefix: str, rows: dict[str, str]) -> None:
    if prefix in SKIP or HEALTH_NOISE.match(prefix):
        return
    if prefix == "verify" and isinstance(value, dict) and value.get("verdict") == "stale":
        # shown as passed only while its fingerprint holds: a stale verdict says "stale" and why, never "yes"
        value = {**value, "passed": "stale", "summary": f"stale (was: {value.get('summary')})"}
    if prefix == "verify.stale" and isinstance(value, list):
        rows[prefix] = "; ".join(str(reason) for reason in value) if value else "no"
        return
    if prefix == "verify.checks" and isinstance(value, list):
        passed = sum(1 for check in value if isinstance(check, dict) and check.get("passed"))
        rows[prefix] = f"{passed}/{len(value)} passed"
        for check in value:
            if isinstance(check, dict) and not check.get("passed"):
                rows[f"verify.failed.{check.get('name')}"] = show(check.get("detail"))
        return
    if prefix == "env.compat_lines" and isinstance(value, list):   # one sentence per neutralized line
        rows[prefix] = str(len(value)) if value else "none"
        for i, line in enumerate(value):
            rows[f"{prefix}.{i}"] = show(line.get("says") if isinstance(line, dict) else line)
        return
    if prefix == "loader.kinds" and isinstance(value, dict):   # one row per kind of process: its libcuda and why
        for kind, seen in value.items():
            if isinstance(seen, dict):
                rows[f"loader.{kind}"] = " ".join(str(part) for part in (
                    seen.get("libcuda") or "none", f"({seen['version']})" if seen.get("version") else "",
                    "stub" if seen.get("stub") else "", f"by {seen['step']}" if seen.get("step") else "",
                    seen.get("set_by") or "") if part)
        return
    if prefix in ("loader.conf", "loader.preload") and isinstance(value, list):   # file:line dir, one cell
        rows[prefix] = " ".join(f"{c.get('file')}:{c.get('line')}={c.get('dir') or c.get('entry')}"
                                for c in value if isinstance(c, dict)) or "none"
        return
    if prefix == "loader.cache" and isinstance(value, list):
        rows[prefix] = " ".join(f"{c.get('name')}={c.get('real')}" for c in value if isinstance(c, dict)) or "none"
        return
    if re.fullmatch(r"shells\.\w+\.ld_changes", prefix) and isinstance(value, list):   # file:line of each change
        rows[prefix] = " ".join(f"{c.get('file')}:{c.get('line')}" for c in value if isinstance(c, dict)) or "none"
        return
    if isinstance(value, dict):
        if not value and prefix:
            rows[prefix] = ABSENT
        for key, item in value.items():
            _walk(item, f"{prefix}.{key}" if prefix else str(key), rows)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            _walk(item, f"{prefix}.{index}", rows)
    else:
        rows[prefix] = show(value)


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


def drift(previous: dict | None, current: dict | None) -> list[tuple[str, str, str]]:
    """What changed between two records of one host: [(path, before, after)] (a driver upgrade, a library gone).
    The facts that move on their own (fleet/facts/readings.py: the kernel log's length, temperatures, free disk)
    are no change of the host: left out."""
    before, after = flatten(previous), flatten(current)
    paths = list(dict.fromkeys([*before, *after]))
    return [(path, before.get(path, ABSENT), after.get(path, ABSENT)) for path in paths
            if not moves_on_its_own(path) and before.get(path, ABSENT) != after.get(path, ABSENT)]


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
