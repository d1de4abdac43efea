"""observe: one probe of a host -> an `Observed` value (facts, decisions, rendered tasks, parsed checks).

The probe is ONE remote command holding the facts script and every task's check, rendered from what came
before (the host's last facts record, or this converge's previous Observed); if the live facts render the checks
differently (first run, a changed host), one more command runs the checks again. A check that runs a helper
program (fleet/programs.py) carries its text only where the facts it was rendered from lack its file;
where the host says it lacks one all the same, one more command runs those checks with the text. Decide-and-render runs once per
probe for the live facts; the guess is reused for them where the two differ only in readings of the moment
(decided.READINGS), and after changes the previous Observed is the guess (no decide for it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from fleet import sections
from fleet import programs
from fleet.connection import Connection
from fleet.errors import FleetError, InputError
from fleet.inventory import Host
from fleet.resources.base import CheckResult, Seen
from fleet.roles import Task
from fleet.engine.decided import Decided, check_sections, decide_tasks, without_readings
from fleet.engine import probe
from fleet.engine.setup import Setup


@dataclass(frozen=True)
class Observed:
    host: str
    facts: dict                          # a new dict: the probe's facts, what the checks' answers fold in
    decided: Decided                     # the decisions and tasks for these facts
    checks: Mapping[str, CheckResult]    # task id -> its check's answer (enabled tasks only)
    # after changes: the previous probe's enabled tasks that these facts leave out (their role's or task's `when:`
    # turned false, e.g. cuda_toolkit once the toolkit is there), task id -> their check as it ran in this probe
    left_out: Mapping[str, CheckResult] = dataclasses.field(default_factory=lambda: MappingProxyType({}))

    @property
    def tasks(self) -> tuple[Task, ...]:
        return self.decided.tasks

    @property
    def decisions_json(self) -> dict:
        return self.decided.decisions_json

    @property
    def refuse(self) -> str | None:
        return self.decided.decisions.refuse


def observe(conn: Connection, host: Host, setup: Setup, last: "dict | Observed | None", *,
            forced: str | None = None, without_records: bool = False, also=()) -> Observed:
    """Facts + every check in one command (two when the live facts render the checks differently).
    `last`: the host's last facts record (None: none) or this converge's previous Observed; never modified.
    `forced`: why the checks behind a gate run whatever it says. `without_records`: the checks of the judged
    resources that keep a record are left out (a task failed earlier in this run: judge skips them). `also`: more
    `facts.` sections for that first command (bootstrap's: the health sources the routine probe leaves out)."""
    setup.progress(host.name, "probe: facts and checks")
    forced = forced or setup.rerun
    max_age = None if forced else gate_age(setup, host)
    last_facts = last.facts if isinstance(last, Observed) else last
    guess = last.decided if isinstance(last, Observed) else _guess(setup, host, last_facts)
    # --check writes nothing: a program's text runs from a temporary copy; nor does a probe of a host its last
    # record refuses (a refused host is never written to: its checks' programs are not installed either)
    refused = guess is not None and guess.decisions.refuse
    needs = probe.needs_of(host, last_facts, install=not setup.check_mode and not refused)
    guessed = _sections_of(guess, max_age, without_records, needs.have, needs.install)
    # facts and fleet's own checks all start at once; a role author's checks run after them (sections.together)
    facts, found = probe.probe(conn, host, needs, (*guessed, *also), timeout=deadline(guess))
    decided = _decide(setup, host, facts, guess)
    if decided.decisions.refuse:   # nothing is planned, applied nor judged: no more commands, nothing installed
        return Observed(host.name, dict(facts), decided, MappingProxyType({}))
    # the guess stands for the live facts (only readings differ): its checks are the ones just sent
    wanted = guessed if guessed and guess is not None and decided.tasks is guess.tasks else \
        check_sections(decided, max_age, without_records=without_records, have=probe.programs_of(facts),
                       install=not setup.check_mode)
    if wanted and wanted != guessed:   # none wanted (every task left out by these facts): nothing more to ask
        found.update(probe.run_sections(conn, sections.together(wanted), "checks", deadline(decided)))
    # a helper program the host turned out to lack (removed, changed): those checks again, with its text
    lacking = {t.id for t in decided.tasks if programs.missing(getattr(found.get(f"check.{t.id}"), "output", ""))}
    if lacking:
        again = check_sections(decided, max_age, without_records=without_records, have=(), only=lacking,
                               install=not setup.check_mode)
        found.update(probe.run_sections(conn, sections.together(again), "checks", deadline(decided)))
    checks, folded, seen = {}, dict(facts), Seen(facts, max_age, forced)
    # the helper programs the host has now: the listing, and what the checks after it installed (their lines are
    # fleet's, not the checks' answers)
    added = [f for name, sec in found.items() if name.startswith("check.") for f in programs.installed(sec.output)]
    if added:
        folded["programs"] = sorted(set(probe.programs_of(facts)) | set(added))
        found = {name: dataclasses.replace(sec, output=programs.unmarked(sec.output)) if name.startswith("check.")
                 else sec for name, sec in found.items()}
    for t in decided.tasks:
        if t.enabled and not (without_records and t.resource.writes_record):
            # a check's answer may fold into the facts (a reused kept record: that record)
            checks[t.id], fold = read_check(t, found.get(f"check.{t.id}"), seen)
            folded.update(fold)
    return Observed(host.name, folded, decided, MappingProxyType(checks), _left_out(guess, checks, found, seen)
                    if isinstance(last, Observed) else MappingProxyType({}))


def _left_out(guess: Decided | None, checks: dict, found: dict, seen: Seen) -> Mapping[str, CheckResult]:
    """The guess's tasks these facts no longer enable, read from their checks that ran in this probe (their
    sections were the guess's): what confirm proves a change by where the task itself is now left out."""
    out = {}
    for t in guess.tasks if guess else ():
        sec = found.get(f"check.{t.id}")
        if t.enabled and t.id not in checks and sec is not None and not t.resource.judged:
            out[t.id] = read_check(t, sec, seen)[0]
    return MappingProxyType(out)


def last_facts(setup: Setup, host: Host) -> dict | None:
    """The host's last record, only to guess its checks: a damaged one is noted and ignored, never a failure
    (it is replaced by this run's record)."""
    from fleet.record import store

    try:
        return store.read(setup.facts_dir, host.name)
    except InputError as exc:
        setup.progress(host.name, f"note: ignoring the last facts record ({exc})")
        return None


def deadline(decided: Decided | None) -> float:
    """How long one probe may take: the facts' own limit plus each role author's check's (verify's is 900 s)."""
    asked = sum(int(t.resource.p.get("timeout") or 0) for t in (decided.tasks if decided else ())
                if t.enabled and not t.resource.concurrent_check)
    return probe.PROBE_TIMEOUT + asked


def gate_age(setup: Setup, host: Host) -> float | None:
    """How old a kept record may be and still stand (Resource.gate_age), asked of the types the roles use."""
    from fleet.resources import TYPES

    for kind in dict.fromkeys(t.type for r in setup.roles for t in r.tasks):
        try:
            age = TYPES[kind].gate_age(host.vars, setup.roles) if kind in TYPES else None
        except ValueError as exc:
            raise InputError(f"{host.name}: {exc}") from None
        if age is not None:
            return age
    return None


def _guess(setup: Setup, host: Host, facts: dict | None) -> Decided | None:
    """The tasks as the last record renders them; a record that no longer renders is simply not used."""
    if not facts:
        return None
    try:
        return decide_tasks(setup.roles, host, facts, check_mode=setup.check_mode)
    except (FleetError, TypeError, ValueError, KeyError, AttributeError):  # a damaged or foreign record
        return None


def _sections_of(guess: Decided | None, max_age: float | None, without_records: bool = False,
                 have=(), install: bool = True) -> tuple[str, ...]:
    if guess is None:
        return ()
    try:
        return check_sections(guess, max_age, without_records=without_records, have=have, install=install)
    except (FleetError, TypeError, ValueError, KeyError, AttributeError):
        return ()


def _decide(setup: Setup, host: Host, facts: dict, guess: Decided | None) -> Decided:
    """The live facts' Decided: the guess itself where only readings of the moment differ."""
    if (guess is not None and isinstance(guess.facts, dict) and not setup.reads_readings
            and without_readings(guess.facts) == without_readings(facts)):
        return dataclasses.replace(guess, facts=facts)
    return decide_tasks(setup.roles, host, facts, check_mode=setup.check_mode)


def read_check(task: Task, sec: sections.Section | None, seen: Seen) -> tuple[CheckResult, dict]:
    """A task's check answer (Resource.read), and what it folds into the facts; never raises for host output."""
    if sec is None:
        return CheckResult(False, "check did not run", error="no answer from the check (connection lost?)"), {}
    try:
        return task.resource.read(sec.rc, sec.output, seen)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:   # e.g. a JSON answer of another shape
        why = f"the answer has a shape fleet cannot read ({type(exc).__name__}: {exc})"
        return CheckResult(False, why, error=why), {}

