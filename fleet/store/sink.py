"""HistorySink: every run's host reports into the history store (a fleet.record.sinks.Sink, added by for_run).

The store opens at the run's first host (a run that reaches no host opens nothing); history older than the
retention is purged once per run. A store that cannot be reached costs one warning, never the run.
"""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timezone
from typing import Any

from fleet.store import schema

STATUSES = {"ok", "failed", "unreachable", "refused", "interrupted"}


class HistorySink:
    """A store that cannot be opened or written raises OSError with one sentence: fleet.record.sinks.Sinks makes it
    a warning the printer shows, never the run's failure (the facts records are what the next run reads). Opening
    is tried once per run."""

    def __init__(self, settings, *, unavailable: str | None = None):
        self.settings = settings
        self._unavailable = unavailable      # why no store could be named for this run
        self._store = None
        self._broken = False
        self._lock = threading.Lock()

    def begin(self, run) -> None:
        """Nothing yet: the store opens with the first host."""

    def host(self, run, name: str, report: dict[str, Any]) -> None:
        from fleet.facts.scrub import scrubbed

        store = self._open()
        if store is None:
            return
        report = scrubbed(report)      # the store keeps what the facts records keep: no secret
        status = report.get("status") if report.get("status") in STATUSES else "failed"
        changed = report.get("changed")
        if not isinstance(changed, int) or isinstance(changed, bool):
            changed = len(report["changes"]) if isinstance(report.get("changes"), list) else None
        facts, part = report.get("record"), False
        if facts is None and isinstance(report.get("verdict"), str):   # fleet health: the verdict over the facts
            facts, part = {"health": {"verdict": report["verdict"], "reason": report.get("reason")}}, True
        envelope = schema.envelope(
            report_id=hashlib.sha256(f"{run.id}/{name}".encode()).hexdigest()[:32], host=name,
            kind=run.command if run.command in schema.KINDS else "run", at=datetime.now(timezone.utc),
            status=status, facts=facts, changed=changed,
            exit=report.get("exit") if isinstance(report.get("exit"), int) else None)
        try:
            store.add(schema.check(envelope, known_finite=True), merge=part)   # scrubbed: every number finite
        except Exception as exc:   # noqa: BLE001 - a destination that fails never costs the run
            raise OSError(f"history store {self.settings.url}: {name}'s report not kept ({_why(exc)})") from None

    def end(self, run, status: int) -> None:
        with self._lock:
            store, self._store = self._store, None
        if store is None:
            return
        try:
            store.purge(self.settings.retain)
        except Exception as exc:   # noqa: BLE001
            raise OSError(f"history store {self.settings.url}: old history not purged ({_why(exc)})") from None
        finally:
            store.close()

    def _open(self):
        from fleet.store import open_store

        with self._lock:
            if self._unavailable and not self._broken:
                self._broken = True
                raise OSError(f"history store: this run is not kept ({self._unavailable})")
            if self._store is None and not self._broken:
                try:
                    self._store = open_store(self.settings.url)
                except Exception as exc:   # noqa: BLE001
                    self._broken = True
                    raise OSError(f"history store {self.settings.url}: not reachable, this run is not kept there "
                                  f"({_why(exc)})") from None
            return self._store


def sink_for(run, facts_dir=None, inventory=None) -> HistorySink:
    """The history sink of a run (fleet.record.sinks.for_run): the store its inventory names (FLEET_STORE over
    it), else SQLite beside the facts records. `inventory`: the run's, loaded already (the store reads no file)."""
    from types import SimpleNamespace

    from fleet.store import settings

    try:
        if inventory is None and facts_dir is not None:
            inventory = SimpleNamespace(store={}, facts_dir=facts_dir)
        return HistorySink(settings(inventory))
    except Exception as exc:   # noqa: BLE001 - no store named (no inventory, no FLEET_STORE): one warning
        return HistorySink(None, unavailable=_why(exc))


def _why(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
