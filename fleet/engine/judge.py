"""The end of a converge, before its report: the assertions (assert, verify) judged on the last Observed, the records
the judged resources that keep one make (Resource.writes_record: verify's) folded into the facts and written to the
host where they ran. The engine knows such a resource by its hooks (fleet/resources/base.py), not by its type."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.connection import Connection
from fleet.engine.observe import Observed
from fleet.engine.plan import TaskReport
from fleet.engine.setup import Setup
from fleet.errors import HostError
from fleet.jsontext import dumps, finite
from fleet.inventory import Host


AFTER_CHANGES = "judged after the planned changes"   # check mode: an assertion apply judges only after them


@dataclass(frozen=True)
class Judged:
    entries: tuple[TaskReport, ...]     # one per enabled assertion, in order (up to one fleet could not read)
    records: tuple = ()                 # (resource, record) for each assertion that keeps one (verify), where it ran
    error: str | None = None


def judge(observed: Observed, check_mode: bool, *, skip_records: str | None = None, pending: int = 0) -> Judged:
    """The assertions (assert, verify), judged on the last probe. An answer that makes a record of a shape fleet
    cannot read is an error that keeps the report and the facts record. `skip_records`: why the assertions that keep
    a record are not judged in this run (a task failed earlier): their entries say so, no record is kept or written.

    In check mode an assertion is counted as the apply that follows will count it, never as a change: with
    `pending` changes planned, apply judges it only after them, and counts it "ok" when it passes then (the plan
    of a run that goes as planned), so it is "ok" here too, its reason saying that it is judged after the changes
    and what it says now; with none, apply judges it on this very state ("failed" where it fails now)."""
    entries, records = [], []
    providers = observed.decisions_json.get("missing_providers", {}) or {}
    for task in observed.tasks:
        if not task.resource.judged or not task.enabled:
            continue
        if task.resource.writes_record and (skip_records or task.id not in observed.checks):
            entries.append(TaskReport(task.spec.role, task.spec.name, "skipped",
                                      f"not run: {skip_records or 'its check was left out'}", id=task.id))
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
            status, reason = ("ok", f"{AFTER_CHANGES} ({pending}); now: {reason}") if pending \
                else ("failed", f"would fail: {reason}")
        entries.append(TaskReport(task.spec.role, task.spec.name, status, reason, id=task.id))
    return Judged(tuple(entries), tuple(records))


def final_facts(observed: Observed, judged: Judged) -> dict:
    """The facts to record: the last probe's, with each record an assertion made folded in (verify: the record and
    what it tells of torch)."""
    facts = dict(observed.facts)
    for resource, kept in judged.records:
        facts = resource.fold(facts, kept)
    return facts


def write_records(conn: Connection, host: Host, setup: Setup, judged: Judged) -> str | None:
    """Each kept record, written where its resource ran (verify's carries the fingerprint and time the next probe
    compares) to its record_path (Setup.record_path: elsewhere). Returns why one could not be written (None: written,
    or nothing to write)."""
    if not setup.write_records or setup.check_mode:
        return None
    for resource, record in judged.records:
        path = setup.record_path or resource.record_path
        if not resource.writes_record or not path:
            continue
        try:   # sudo=True: it wants root; the connection applies shell.needs_sudo
            conn.write_file(path, dumps(finite(record), indent=1) + "\n", mode=0o644, sudo=True)
        except HostError as exc:
            return f"could not record the {resource.type_name} result on the host: {exc}"
    return None


def record_verdict(observed: Observed, judged: Judged | None, check_mode: bool, *, skipped: str | None = None) -> str:
    """What the recap's verify column says of the judged resource that keeps a record: THIS run's verdict, or that it
    did not run and why. Never "passed" for a host whose task failed in this run (it is not run then: `skipped`)."""
    tasks = [t for t in observed.tasks if t.resource.writes_record]
    if not tasks:
        return "skipped: role not in this run"
    enabled = next((t for t in tasks if t.enabled), None)
    if enabled is None:
        return f"skipped: {tasks[0].skip_reason or 'its condition is false'}"
    if skipped:   # verify ran in the probe that found the failure (nothing to apply): it ran but does not count
        return f"{'not counted' if enabled.id in observed.checks else 'skipped'}: {skipped}"
    entry = next((e for e in (judged.entries if judged else ()) if e.id == enabled.id), None)
    if entry is not None and check_mode and entry.reason.startswith(AFTER_CHANGES):
        return "after the changes"   # what it fails on now is in the entry (-v); apply judges it then
    if entry is None or entry.status == "skipped":
        return f"skipped: {entry.reason if entry else 'not judged'}"
    reused = enabled.id in observed.checks and enabled.resource.reused(observed.facts) and entry.status == "ok"
    if check_mode:
        return ("passed (reused)" if reused else "passed (check mode: no perf smoke)") if entry.status == "ok" \
            else "would fail"
    if entry.status == "ok":
        return "passed (reused)" if reused else "passed"
    return "failed"
