"""HistorySink: every run's host reports into the history store (a fleet.record.sinks.Sink).

The store opens at the run's first host (a run that reaches no host opens nothing); history older than the
retention is purged once per run. A store that cannot be reached costs one line on stderr, never the run.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from datetime import datetime, timezone
from typing import Any

from fleet.store import schema

STATUSES = {"ok", "failed", "unreachable", "refused", "interrupted"}


class HistorySink:
    def __init__(self, settings, *, err=None):
        self.settings = settings
        self.err = err or sys.stderr
        self._store = None
        self._broken = False
        self._lock = threading.Lock()

    def begin(self, run) -> None:
        """Nothing yet: the store opens with the first host."""

    def host(self, run, name: str, report: dict[str, Any]) -> None:
        store = self._open()
        if store is None:
            return
        status = report.get("status") if report.get("status") in STATUSES else "failed"
        changed = report.get("changed")
        if not isinstance(changed, int) or isinstance(changed, bool):
            changed = len(report["changes"]) if isinstance(report.get("changes"), list) else None
        envelope = schema.envelope(
            report_id=hashlib.sha256(f"{run.id}/{name}".encode()).hexdigest()[:32], host=name,
            kind=run.command if run.command in schema.KINDS else "run", at=datetime.now(timezone.utc),
            status=status, facts=report.get("record"), changed=changed,
            exit=report.get("exit") if isinstance(report.get("exit"), int) else None)
        try:
            store.add(schema.check(envelope))
        except Exception as exc:   # noqa: BLE001 - a destination that fails never costs the run
            self._say(f"history store {self.settings.url}: {name}'s report not kept ({_why(exc)})")

    def end(self, run, status: int) -> None:
        with self._lock:
            store, self._store = self._store, None
        if store is None:
            return
        try:
            store.purge(self.settings.retain)
        except Exception as exc:   # noqa: BLE001
            self._say(f"history store {self.settings.url}: old history not purged ({_why(exc)})")
        finally:
            store.close()

    def _open(self):
        from fleet.store import open_store

        with self._lock:
            if self._store is None and not self._broken:
                try:
                    self._store = open_store(self.settings.url)
                except Exception as exc:   # noqa: BLE001
                    self._broken = True
                    self._say(f"history store {self.settings.url}: not reachable, this run is not kept there "
                              f"({_why(exc)})")
            return self._store

    def _say(self, line: str) -> None:
        print(f"fleet: warning: {line}", file=self.err, flush=True)


def sink_for(run, facts_dir=None) -> HistorySink:
    """The history sink of a run (fleet.record.sinks.for_run): the store its inventory names (FLEET_STORE over
    it), else SQLite beside the facts records."""
    from types import SimpleNamespace

    from fleet.inventory import load_inventory
    from fleet.store import settings

    inventory = load_inventory(run.inventory, keys_must_exist=False) if run.inventory else None
    if inventory is None and facts_dir is not None:
        inventory = SimpleNamespace(store={}, facts_dir=facts_dir)
    return HistorySink(settings(inventory))


def record_outcomes(inventory, command: str, outcomes: dict, *, check: bool = False) -> None:
    """Until every workflow calls its sinks (fleet.record.sinks.for_run), apply and facts hand their outcomes
    here once the run ends: each host's report into the inventory's history store. --check records nothing."""
    from fleet.record.sinks import Run
    from fleet.store import settings

    if check:
        return
    sink = HistorySink(settings(inventory))
    run = Run(command, getattr(inventory, "path", None), check)
    sink.begin(run)
    try:
        for name, outcome in outcomes.items():
            if getattr(outcome, "started", True) is False:
                continue
            sink.host(run, name, report_of(outcome))
    finally:
        sink.end(run, 0)


def report_of(outcome) -> dict:
    """A parallel Outcome (a facts record, or apply's HostReport) as the sinks' report."""
    value = outcome.value
    record = getattr(value, "facts", value) if value is not None else None
    failed = bool(outcome.error) or bool(getattr(value, "failed", False))
    status = ("interrupted" if outcome.interrupted else "refused" if outcome.refused else
              "unreachable" if outcome.unreachable or getattr(value, "unreachable", False) else
              "failed" if failed else "ok")
    changes = [t.task for t in getattr(value, "tasks", ()) if getattr(t, "status", None) == "changed"]
    return {"status": status, "record": record if isinstance(record, dict) else None,
            "changes": changes if hasattr(value, "tasks") else None}


def _why(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
