"""Where a run's results go: every workflow hands each host's report to its sinks, never to the printer.

A sink is any object with the three methods of `Sink`. A workflow calls `begin` once, `host` once per host
as that host finishes (from worker threads: a sink locks what it shares), and `end` once, whatever happened
(Ctrl-C included). A sink that fails says so in one line on stderr and the run goes on: a destination that
is down never costs the user the run (`Sinks` calls them so). A new destination is one class here or in its own
module, added in `for_run`: the facts records (fleet/record/store.py FactsRecords), the run log
(fleet/record/runlog.py RunLog), the history store (fleet/store/sink.py HistorySink).

`report` is the host's result as JSON-able data (`report_of`): `{"status": "ok"|"failed"|"unreachable"|"refused"|
"interrupted", "record": the facts record to keep (None: none), the command's JSON document of the host (apply's
counts and tasks, health's verdict, ...), "stats": {"remote_commands", "seconds"}}`. Secrets are scrubbed on the way
out: `Sinks` hands every sink the report scrubbed once (fleet.facts.scrub.scrubbed: a `Scrubbed`), and each sink
still passes what it writes through `scrubbed`, a no-op on a report already made so.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Run:
    """One command's run: what ran, when, over which inventory, and where its results go (`for_run` reads them)."""
    command: str                      # apply, facts, verify, health, bootstrap, script, ...
    inventory: Path | None
    check: bool = False               # --check: nothing was changed
    argv: tuple = ()                  # the command line as given (the run log's head; empty: `fleet COMMAND`)
    facts_dir: Path | None = None     # where the run keeps each host's facts record (None: it keeps none)
    log: Path | None = None           # --log FILE (None: a new file under the runs folder)
    loaded: Any = None                # the inventory, loaded: its `store:` names the history store (None: FLEET_STORE,
    #                                   else SQLite beside facts_dir)
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


class Sink(Protocol):
    def begin(self, run: Run) -> None: ...

    def host(self, run: Run, name: str, report: dict[str, Any]) -> None: ...

    def end(self, run: Run, status: int) -> None: ...


class Sinks:
    """The run's sinks as one: each call goes to every sink in turn. A sink that raises an OSError (its sentence
    says what and the fix) or any other error leaves one line in `warnings` (the printer shows them, on stderr) and
    the run goes on; one that raises a FleetError could not keep what the next run reads (the facts records): that
    host is named in `failed` too (a failed run, exit 1)."""

    def __init__(self, sinks: list[Sink]):
        self.sinks = list(sinks)
        self.warnings: list[str] = []
        self.failed: dict[str, str] = {}
        self.told: set[str] = set()

    def begin(self, run: Run) -> None:
        for sink in self.sinks:
            self._call(None, sink.begin, run)

    def host(self, run: Run, name: str, report: dict[str, Any]) -> None:
        from fleet.facts.scrub import scrubbed

        self.told.add(name)
        report = scrubbed(report)      # once for every sink: each one's own scrubbed() is then a no-op
        for sink in self.sinks:
            self._call(name, sink.host, run, name, report)

    def end(self, run: Run, status: int) -> None:
        for sink in self.sinks:
            self._call(None, sink.end, run, status)

    def _call(self, name: str | None, method, *args) -> None:
        from fleet.errors import FleetError

        try:
            method(*args)
        except FleetError as exc:
            if name is not None:
                self.failed[name] = str(exc)
            self.warnings.append(str(exc))
        except OSError as exc:
            self.warnings.append(str(exc))
        except Exception as exc:  # a destination that is down never costs the user the run
            self.warnings.append(f"{type(method.__self__).__name__}: {type(exc).__name__}: {exc}")


def for_run(run: Run) -> list[Sink]:
    """The sinks of one run: the facts records where the run gathers facts (`run.facts_dir`), the run log
    (`run.log`, else a new file under the runs folder: fleet/record/runlog.py) and, but in --check, the history store.
    Every command that reaches hosts leaves a run record."""
    from fleet.record.runlog import RunLog
    from fleet.record.store import FactsRecords

    from fleet.store.sink import sink_for

    out: list[Sink] = []
    if run.facts_dir is not None:
        out.append(FactsRecords(Path(run.facts_dir)))
    out.append(RunLog(run.log))
    if not run.check:          # the history store (fleet/store/): every host's report, a row per change
        out.append(sink_for(run, run.facts_dir, run.loaded))
    return out


def report_of(outcome, doc: dict[str, Any], record: dict | None = None) -> dict[str, Any]:
    """A host's report for the sinks, from its Outcome (fleet.connection.parallel) and its JSON document: `status`,
    the facts `record` to keep (None: keep none), the document, its `stats`."""
    if outcome.interrupted:
        status = "interrupted"
    elif outcome.refused:
        status = "refused"
    elif outcome.unreachable:
        status = "unreachable"
    elif outcome.error or doc.get("failed"):
        status = "failed"
    else:
        status = "ok"
    return {"status": status, "record": record, **doc, "stats": outcome.stats()}
