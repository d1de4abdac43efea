"""The end of a converge: asserts judged on the last Observed, the verify record written where verify ran, the
facts recorded, and the `HostReport` built ONCE from those values."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from ..connection import Connection
from ..errors import HostError
from ..inventory import Host
from .observe import Observed
from .plan import TaskReport
from .setup import Setup


@dataclass(frozen=True)
class HostReport:
    host: str
    check_mode: bool
    tasks: tuple[TaskReport, ...] = ()
    refuse: str | None = None
    decisions: dict | None = None
    facts: dict | None = None
    error: str | None = None
    phases: Mapping[str, float] = field(default_factory=dict)
    unreachable: bool = False      # the connection dropped mid-apply: `error` names the task it was in

    def count(self, status: str) -> int:
        return sum(1 for t in self.tasks if t.status == status)

    @property
    def failed(self) -> bool:
        return bool(self.error or self.refuse or self.count("failed"))

    def to_json(self) -> dict:
        return {"ok": self.count("ok"), "changed": self.count("changed"), "failed": self.count("failed") +
                (1 if (self.error or self.refuse) and not self.count("failed") else 0),
                "skipped": self.count("skipped"), "unreachable": self.unreachable, "check": self.check_mode,
                "refuse": self.refuse, "error": self.error, "tasks": [t.to_json() for t in self.tasks],
                "reasons": (self.decisions or {}).get("reasons", {}), "phases": dict(self.phases)}


@dataclass(frozen=True)
class Judged:
    entries: tuple[TaskReport, ...]     # one per enabled assertion, in order (up to one fleet could not read)
    records: tuple = ()                 # (resource, record) for each assertion that keeps one (verify), where it ran
    error: str | None = None

    @property
    def verify(self) -> dict | None:
        """The new verify record, where verify ran (the one the host keeps in its verify file)."""
        return next((record for resource, record in self.records if resource.writes_record), None)


def judge(observed: Observed, check_mode: bool) -> Judged:
    """The assertions (assert, verify), judged on the last probe. An answer that makes a record of a shape fleet
    cannot read is an error that keeps the report and the facts record."""
    entries, records = [], []
    providers = observed.decisions_json.get("missing_providers", {}) or {}
    for task in observed.tasks:
        if not task.resource.judged or not task.enabled:
            continue
        result = observed.checks[task.id]
        status = "ok" if result.in_state else "failed"
        reason = result.reason
        try:
            kept = task.resource.record(result, providers)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            return Judged(tuple(entries), tuple(records),
                          f"the {task.spec.type} result of {task.spec.role} has a shape fleet cannot read "
                          f"({type(exc).__name__}: {exc}); check the role's {task.spec.type} output")
        if kept is not None:
            records.append((task.resource, kept))
            reason = kept.get("summary") or reason
        if check_mode and not result.in_state:
            status, reason = "changed", f"would fail now: {reason}"
        entries.append(TaskReport(task.spec.role, task.spec.name, status, reason, id=task.id))
    return Judged(tuple(entries), tuple(records))


def final_facts(observed: Observed, judged: Judged) -> dict:
    """The facts to record: the last probe's, with each record an assertion made folded in (verify: the record and
    what it tells of torch)."""
    facts = dict(observed.facts)
    for resource, kept in judged.records:
        facts = resource.fold(facts, kept)
    return facts


def write_verify(conn: Connection, host: Host, setup: Setup, verify: dict | None) -> str | None:
    """Written whenever verify ran: the record carries the fingerprint and time the next probe compares.
    Returns why it could not be written (None: written, or nothing to write)."""
    if verify is None or not setup.verify_write or setup.check_mode:
        return None
    try:   # sudo=True: it wants root; the connection applies shell.needs_sudo
        conn.write_file(setup.verify_path, json.dumps(verify, indent=1) + "\n", mode=0o644, sudo=True)
    except HostError as exc:
        return f"could not record the verify result on the host: {exc}"
    return None


def record(setup: Setup, host: Host, facts: dict) -> None:
    from . import session

    session.record(setup.facts_dir, host.name, facts)


def report(host: Host, setup: Setup, observed: Observed, entries: tuple[TaskReport, ...] = (), *,
           facts: dict | None = None, error: str | None = None, refuse: str | None = None,
           unreachable: bool = False, phases: Mapping[str, float] | None = None) -> HostReport:
    """The host's report, from the values: the last Observed's decisions, the task entries, the recorded facts."""
    return HostReport(host.name, setup.check_mode, tuple(entries), refuse, observed.decisions_json,
                      observed.facts if facts is None else facts,
                      f"refused: {refuse}" if refuse else error, dict(phases or {}), unreachable)
