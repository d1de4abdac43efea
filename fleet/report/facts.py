"""How `fleet facts` shows its results (a FactsRun, fleet/workflows/facts.py): one JSON document, an export (md,
csv, html; to stdout or a file), or on a terminal a short view per host, else hosts side by side; the drift since
the record before; where the records went. It reads nothing: the run holds every record it shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fleet.record.store import age_seconds, describe_age
from fleet.facts import rows
from fleet.report import Reporter, safe_value


@dataclass(frozen=True)
class FactsView:
    """How the facts are to be shown, as parsed from the flags."""

    json: bool = False
    format: str = "table"                 # table, md, csv, html
    show_all: bool = False                # every fact, one column per host
    drift: bool = False                   # what changed since the record before
    output: Path | None = None            # md/csv/html to this file (atomically) instead of stdout
    history: bool = False                 # a question over the history store (fleet/report/history.py)
    inventory: str | None = None          # as the user named it: the commands a view prints name it so


@dataclass(frozen=True)
class Shown:
    """What every form shows, made once from the run: the records and the errors made terminal-safe (remote text:
    no secrets, no terminal escapes), each host's column, the drift since the record before."""

    records: dict[str, dict | None]
    errors: dict[str, str]
    columns: list
    ages: dict[str, str | None]           # "3m ago", or None where there is no record
    drift: dict[str, list]                # host -> [(path, before, after)]
    since: dict[str, str]                 # host -> "previous record 1h 2m ago" / "no previous record"


def shown(run, *, drift: bool) -> Shown:
    from fleet.report import compare

    seconds = {name: age_seconds(record) if record else None for name, record in run.records.items()}
    ages = {name: describe_age(s) if run.records[name] else None for name, s in seconds.items()}
    since = {name: f"previous record {describe_age(age_seconds(prev))}" if prev else "no previous record"
             for name, prev in run.previous.items()}
    records, previous, errors = safe_value([run.records, run.previous,
                                            {name: o.error for name, o in run.outcomes.items() if o.error}])
    changes = {name: rows.drift(previous[name], records[name]) if drift and records[name] and previous[name]
               else [] for name in records}
    columns = [compare.Column(name, reachable=False, age=ages[name], error=errors[name], label=_label(o, run.cached))
               if o.error else compare.Column(name, age=ages[name] if run.cached else None)
               for name, o in run.outcomes.items()]
    return Shown(records, errors, columns, ages, changes, since)


def _label(outcome, cached: bool) -> str:
    return ("not gathered" if cached or not (outcome.unreachable or outcome.refused)
            else "refused" if outcome.refused else "unreachable")


def printer_for(reporter: Reporter, view: FactsView):
    """The printer of the form the flags ask for: one JSON document, an export (md, csv, html), or tables; the
    history store's answer (--where, --failed, ...) in any of those forms."""
    if view.history:
        from fleet.report.history import HistoryPrinter
        return HistoryPrinter(reporter, view)
    if view.json:
        return JsonPrinter(reporter, view)
    return TablePrinter(reporter, view) if view.format == "table" else ExportPrinter(reporter, view)


@dataclass(frozen=True)
class JsonPrinter:
    """--json: one document, each host's record (None where none was gathered), errors and drift beside them."""
    reporter: Reporter
    view: FactsView

    def finish(self, run) -> None:
        extra = {}
        errors = {name: o.error for name, o in run.outcomes.items() if o.error}
        if errors:
            extra["errors"] = {name: {"error": error, "unreachable": run.outcomes[name].unreachable,
                                      "last_record_age_s": _rounded(age_seconds(run.records[name]))}
                               for name, error in errors.items()}
        if self.view.drift:
            extra["drift"] = {name: [{"path": p, "before": b, "after": a}
                                     for p, b, a in rows.drift(run.previous[name], record)]
                              if record and run.previous[name] else [] for name, record in run.records.items()}
        self.reporter.json({name: o.value for name, o in run.outcomes.items()}, run.outcomes, **extra)
        _warn(self.reporter, run)


@dataclass(frozen=True)
class TablePrinter:
    """On a terminal a short view per host (--all: every fact, one column per host); in a pipe, hosts side by side,
    identical rows folded; the drift since the record before; where the records went."""
    reporter: Reporter
    view: FactsView

    def finish(self, run) -> None:
        from rich.markup import escape

        from fleet.report import compare

        seen = shown(run, drift=self.view.drift)
        reporter, last = self.reporter, seen.records
        for name, outcome in run.outcomes.items():
            if outcome.error:
                reporter.error(outcome.error)
            for problem in (outcome.value or {}).get("probe", {}).get("errors", []):
                reporter.warn(f"{name}: {problem}")
        if not reporter.plain and not self.view.show_all:   # a person at a terminal: each host at a glance
            from fleet.report.glance import glance

            for column in seen.columns:
                reporter.print(glance(column.host, last[column.host], column, self.view.inventory))
            reporter.note("every fact, hosts side by side: fleet facts --all (or --json)")
        else:
            # With one host there is nothing to compare: fold nothing.
            show_all = self.view.show_all or sum(1 for record in last.values() if record) < 2
            comparison = compare.compare(last, seen.columns)
            if reporter.plain or compare.fits(comparison, reporter.env.console.width):
                reporter.print(compare.render(comparison, show_all=show_all))
            else:   # a terminal too narrow for every fact name whole beside each host's column
                reporter.print(compare.render_stacked(comparison))
        if self.view.drift:
            for name, changes in seen.drift.items():
                if changes:
                    reporter.print(compare.render_drift(name, changes, since=seen.since[name]))
                else:   # one line, not a table with no rows
                    first = "previous record" if run.previous[name] else "first record"
                    reporter.print(f"{escape(name)}: no change since the {first} [dim]({escape(seen.since[name])})"
                                   "[/dim]")
        if not run.cached:
            written = sum(1 for name, o in run.outcomes.items() if not o.error)
            timing = ", ".join(f"{name} {o.seconds:.2f}s/{o.remote_commands} cmd" for name, o in run.outcomes.items())
            reporter.note(f"{written} record(s) written to {run.facts_dir} ({timing})")
        _warn(reporter, run)


@dataclass(frozen=True)
class ExportPrinter:
    """md, csv or html: every row (differing first), each host's record age; to stdout, or to a file atomically."""
    reporter: Reporter
    view: FactsView

    def finish(self, run) -> None:
        from datetime import datetime, timezone

        from fleet import __version__
        from fleet.atomic import write_atomic
        from fleet.report import compare, export, html

        seen = shown(run, drift=False)
        for outcome in run.outcomes.values():
            if outcome.error:
                self.reporter.error(outcome.error)
        comparison = compare.compare(seen.records, seen.columns)
        if self.view.format == "html":
            now = datetime.now(timezone.utc).isoformat(timespec="seconds")
            text = html.render(comparison, seen.records, seen.ages, generated=now, version=__version__)
        else:
            text = (export.markdown if self.view.format == "md" else export.csv_text)(comparison, seen.ages)
        if self.view.output:
            write_atomic(self.view.output, text.encode(), mode=0o644)
            self.reporter.progress("facts", f"{self.view.format} report written to {self.view.output}")
        else:
            self.reporter.env.console.file.write(text)
            self.reporter.env.console.file.flush()
        _warn(self.reporter, run)


def _warn(reporter: Reporter, run) -> None:
    for warning in run.warnings:
        reporter.warn(warning)


def _rounded(seconds):
    return round(seconds, 1) if seconds is not None else None
