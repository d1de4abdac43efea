"""The flow of one host, as stages over immutable values:

    observe(conn, host, setup, last) -> Observed   facts, decisions, rendered tasks, parsed checks (one probe)
    plan(observed)                   -> Plan       per task ok/changed/skipped/failed, and the tasks to apply
    apply(conn, host, plan, progress) -> Applied   per-task outcome, unreachable, another apply holding the host
    judge(observed, check_mode)      -> Judged     the asserts (verify), on the last probe
    report(host, setup, observed, entries, ...) -> HostReport, built once at the end

`converge` composes them: observe, plan, apply, observe again after changes (the previous Observed is the guess),
confirm every change now checks in state, judge the asserts, write the records the judged resources keep where
they ran, record the facts, report. Round trips are the cost: a converged host costs one remote command.

Asserts are judged only on the last probe, after everything else has converged, in a fresh non-interactive shell
as `ssh host cmd` gets it. A judged resource that keeps a record (Resource.writes_record; the verify role's is the
one fleet ships) sits behind its gate (Resource.gate, gate_age): it runs again only when the gate says so, after
any change in this apply (`forced`), or when asked (Setup.rerun: `fleet verify`, `fleet apply --verify`); after a
task failed in this run it is not run at all, and the report's `verify` says so (HostReport.verify: this run's
verdict, or why it did not run).
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from fleet.connection import Connection
from fleet.errors import HostError
from fleet.inventory import Host
from fleet.engine.apply import apply, merged
from fleet.engine.decided import Decided, check_sections, decide_tasks, maybe_sudo
from fleet.engine.observe import Observed, last_facts, observe
from fleet.engine.plan import Plan, TaskReport, confirm, plan
from fleet.engine.judge import final_facts, judge, record_verdict, write_records
from fleet.engine.report import HostReport, report
from fleet.engine import session
from fleet.engine.setup import Setup

def converge(conn: Connection, host: Host, setup: Setup, first: Observed | None = None) -> HostReport:
    """One host to its roles; its checks are guessed from its last facts record.
    `first`: this host's probe already taken by the caller for this very setup (bootstrap's preview), with the
    checks of the judged resources that keep a record left out (observe's without_records): planned and applied
    from as it stands, so the host is not asked twice; where nothing is to change, those checks are asked then."""
    phases: dict[str, float] = {}
    clock = _clock(phases)
    preview = first is not None
    if first is None:
        with clock("probe"):
            first = observe(conn, host, setup, last_facts(setup, host))
    if first.refuse:
        _record(setup, host, first.facts)
        return report(host, setup, first, refuse=first.refuse, phases=phases, verify="skipped: refused")
    planned = plan(first)
    entries, again, forced = planned.entries, first, None
    if not (setup.check_mode or not planned.to_apply):
        with clock("apply"):
            applied = apply(conn, host, planned, setup.progress, on_task=setup.on_task)
        if applied.held_by:
            raise HostError(f"{host.name}: another apply is running on this host ({applied.held_by}); nothing was "
                            "changed. Wait for it to finish, then run again")
        entries = merged(planned.entries, applied)
        if applied.unreachable:   # nothing more can be asked of the host; its last record stays as it was
            return report(host, setup, first, entries, error=applied.error, unreachable=True, phases=phases,
                          verify="skipped: host unreachable")
        changed = [e.task for e in entries if e.status == "changed"]
        forced = "after changes in this apply: " + ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
    # asked again after this apply's changes (verify forced, naming them); or, where a preview probe left verify out
    # and nothing is to change, for verify alone, behind its gate
    if forced or preview:
        with clock("verify"):
            again = observe(conn, host, setup, first, forced=forced,
                            without_records=bool(forced) and _failed_earlier(entries) is not None)
    return _finish(conn, host, setup, again, confirm(entries, again) if forced else entries, phases)


def _failed_earlier(entries) -> str | None:
    """Why verify does not run in this run: a task failed before it ("host failed earlier: role: task")."""
    failed = next((e for e in entries if e.status == "failed"), None)
    return f"host failed earlier ({failed.role}: {failed.task})" if failed else None


def _finish(conn, host: Host, setup: Setup, last: Observed, entries, phases) -> HostReport:
    """Judge the asserts, write the verify record where verify ran, record the facts, report. Whatever the verify
    step answers or the host does with its file, the report and the record survive. Where a task failed in this
    run, verify is not judged (nor recorded): the recap says so."""
    skipped = _failed_earlier(entries)
    judged = judge(last, setup.check_mode, skip_records=skipped,
                   pending=sum(1 for e in entries if e.status == "changed") if setup.check_mode else 0)
    facts = final_facts(last, judged)
    error = judged.error or write_records(conn, host, setup, judged)
    _record(setup, host, facts)
    return report(host, setup, last, entries + judged.entries, facts=facts, error=error, phases=phases,
                  verify=record_verdict(last, judged, setup.check_mode, skipped=skipped))


def _record(setup: Setup, host: Host, facts: dict) -> None:
    if setup.record_facts:
        session.record(setup.facts_dir, host.name, facts)


def _clock(phases: dict):
    @contextmanager
    def phase(name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            phases[name] = round(phases.get(name, 0) + time.monotonic() - started, 3)
    return phase


__all__ = ["Decided", "HostReport", "Observed", "Plan", "Setup", "TaskReport", "apply", "check_sections", "converge",
           "decide_tasks", "final_facts", "judge", "last_facts", "maybe_sudo", "observe", "plan", "report",
           "session"]
