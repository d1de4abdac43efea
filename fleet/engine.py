"""The flow of one host: probe -> decide -> plan -> apply -> re-probe -> record.

Round trips are the cost. The probe is ONE remote command holding the facts script and every task's check,
rendered from the host's last facts record; if the live facts render the checks differently (first run, a
changed host), one more command runs the checks again. Applies are one command too: each task re-checks and
acts only if needed, and the script stops at the first failure. A converged host costs one command.

Asserts (the verify role) are judged only on the last probe, after everything else has converged, in a fresh
non-interactive shell as `ssh host cmd` gets it. A JSON assert (verify) sits behind a fingerprint
(fleet/verify_gate.py): it runs again only when what it proved may have changed, when the last run is older than
`verify_max_age`, after any change in this apply, or when asked (`fleet verify`, `fleet apply --verify`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import posixpath
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from . import hostlock, sections, shell, verify_gate
from .decide import storage
from .connection import Connection
from .errors import FleetError, HostError, InputError
from .inventory import Host
from .resources.base import CheckResult
from .roles import Role, Task, render_role

VERIFY_PATH = "/var/lib/fleet/verify.json"
_ALREADY = "@@fleet:already-in-state@@"

Progress = Callable[[str, str], None]


@dataclass
class TaskReport:
    role: str
    task: str
    status: str            # ok | changed | failed | skipped
    reason: str
    diff: str | None = None
    id: str = ""
    why: str | None = None  # the role's `why:`, already at the end of `reason`; the report shows it once per role

    def to_json(self) -> dict:
        return {"role": self.role, "task": self.task, "status": self.status, "reason": self.reason, "diff": self.diff}


@dataclass
class HostReport:
    host: str
    check_mode: bool
    tasks: list[TaskReport] = field(default_factory=list)
    refuse: str | None = None
    decisions: dict | None = None
    facts: dict | None = None
    error: str | None = None
    phases: dict[str, float] = field(default_factory=dict)
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
                "reasons": (self.decisions or {}).get("reasons", {}), "phases": self.phases}


@dataclass
class Plan:
    """Decisions and rendered tasks for one set of facts."""

    facts: dict
    decisions: object
    decisions_json: dict
    tasks: list[Task]

    def check_sections(self, conn: Connection, verify_max_age: float | None = None) -> list[str]:
        """Every enabled task's check; a verify (JSON assert) behind its fingerprint gate."""
        out = []
        for t in self.tasks:
            if not t.enabled:
                continue
            body = maybe_sudo(t.resource.check(), t, conn, check=True)
            if _is_verify(t):
                body = verify_gate.gated(body, _venv_of(t), verify_max_age)
            out.append(sections.section(f"check.{t.id}", body))
        return out


class Engine:
    def __init__(self, roles: list[Role], *, facts_dir: Path, check_mode: bool = False,
                 progress: Progress | None = None, verify_write: bool = True, force_verify: str | None = None):
        self.roles = roles
        self.facts_dir = Path(facts_dir)
        self.check_mode = check_mode
        self.progress = progress or (lambda host, msg: None)
        self.verify_write = verify_write
        self.force_verify = force_verify   # why verify must run whatever its fingerprint says (None: it may not)

    # -- the flow ----------------------------------------------------------------------------------
    def converge(self, conn: Connection, host: Host) -> HostReport:
        from .facts import store

        report = HostReport(host.name, self.check_mode)
        clock = _Clock(report.phases)
        cached = self._cached(host)
        with clock("probe"):
            plan, check_out = self._probe(conn, host, cached)
        report.facts, report.decisions = plan.facts, plan.decisions_json
        if plan.decisions.refuse:
            report.refuse = plan.decisions.refuse
            report.error = f"refused: {plan.decisions.refuse}"
            self._record(host, plan.facts)
            return report
        planned = self._plan(plan, check_out, report)
        if self.check_mode or not planned:
            self._finish(conn, host, plan, check_out, report)
            return report
        with clock("apply"):
            self._apply(conn, host, planned, report)
        if report.unreachable:
            return report   # nothing more can be asked of the host; its last record stays as it was
        with clock("verify"):
            changed = [t.task for t in report.tasks if t.status == "changed"]
            plan2, check_out2 = self._probe(conn, host, plan.facts, forced="after changes in this apply: "
                                            + ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else ""))
        report.facts, report.decisions = plan2.facts, plan2.decisions_json
        self._confirm(check_out2, report)
        self._finish(conn, host, plan2, check_out2, report)
        return report

    def _probe(self, conn: Connection, host: Host, facts_for_render: dict | None, forced: str | None = None):
        """Facts + every check in one command (two when the live facts render the checks differently)."""
        from .facts import probe

        self.progress(host.name, "probe: facts and checks")
        forced = forced or self.force_verify
        max_age = None if forced else self._verify_max_age(host)
        guessed = self._guess_checks(conn, host, facts_for_render, max_age)
        probed_with = storage.host_vars(facts_for_render, host.vars)
        found = self.run_sections(conn, "\n".join([probe.script(probed_with)] + guessed), "probe")
        facts = probe.parse(found, host.name)
        if storage.host_vars(facts, host.vars) != probed_with:   # first contact: the venv lives elsewhere
            found.update(self.run_sections(conn, probe.script(storage.host_vars(facts, host.vars)), "probe"))
            facts = probe.parse(found, host.name)
        plan = self.plan_for(host, facts)
        wanted = plan.check_sections(conn, max_age)
        if wanted != guessed:
            found.update(self.run_sections(conn, "\n".join(wanted), "checks"))
        checks = {}
        for t in plan.tasks:
            if t.enabled:
                checks[t.id] = (self._gated_check(t, found.get(f"check.{t.id}"), facts, max_age, forced) if _is_verify(t)
                                else _parse_check(t, found.get(f"check.{t.id}")))
        return plan, checks

    def _verify_max_age(self, host: Host) -> float:
        max_age = host.vars.get("verify_max_age") or next(
            (r.defaults.get("verify_max_age") for r in self.roles if r.defaults.get("verify_max_age")),
            verify_gate.DEFAULT_MAX_AGE)
        try:
            return verify_gate.parse_age(max_age)
        except ValueError as exc:
            raise InputError(f"{host.name}: {exc}") from None

    def _gated_check(self, task: Task, sec: sections.Section | None, facts: dict, max_age: float | None,
                     forced: str | None) -> CheckResult:
        """A verify answered 'reused' stands on the last verify record (read back by this very probe)."""
        if sec is None:
            return _parse_check(task, sec)
        gate = verify_gate.read(sec.output)
        last = facts.get("verify") if isinstance(facts.get("verify"), dict) else None
        if gate.reused:
            if last is None:   # the host vouched for a record this probe could not read back
                why = "the host reports a current verify record, but it could not be read back; run fleet verify"
                return CheckResult(False, why, error=why)
            result = CheckResult(bool(last.get("passed")), str(last.get("summary") or "verify reused"))
            facts["verify"] = {**last, "reused": True, "checked_at": _now(),
                               "reason": f"reused: nothing it proved has changed since {last.get('at')}"}
            return result
        result = _parse_check(task, dataclasses.replace(sec, output=gate.output))
        if isinstance(result.data, dict):
            result = dataclasses.replace(result, data={
                **result.data, "fingerprint": gate.fingerprint, "fingerprint_parts": gate.parts,
                "reused": False,
                "reason": "ran: " + verify_gate.run_reason(last, gate, max_age, datetime.now(timezone.utc), forced)})
        return result

    def _cached(self, host: Host) -> dict | None:
        """The host's last record, only to guess its checks: a damaged one is noted and ignored, never a failure
        (it is replaced by this run's record)."""
        from .facts import store

        try:
            return store.read(self.facts_dir, host.name)
        except InputError as exc:
            self.progress(host.name, f"note: ignoring the last facts record ({exc})")
            return None

    def _guess_checks(self, conn: Connection, host: Host, facts: dict | None, max_age: float | None) -> list[str]:
        """The checks as the last record renders them; a record that no longer renders is simply not used."""
        if not facts:
            return []
        try:
            return self.plan_for(host, facts).check_sections(conn, max_age)
        except (FleetError, TypeError, ValueError, KeyError, AttributeError):  # a damaged or foreign record
            return []

    def plan_for(self, host: Host, facts: dict) -> Plan:
        from .decide import FactsError, VariableError, decide

        host_vars = storage.host_vars(facts, host.vars)   # venv and pip's files on a pod's volume
        try:
            decisions = decide(facts, host_vars)
        except (FactsError, VariableError) as exc:
            raise InputError(f"{host.name}: {exc}") from None
        djson = decisions.to_json()
        # check_mode: templates keep --check read-only and light (verify's perf smoke never runs in it)
        info = {"name": host.name, "user": host.user, "root": shell.user_is_root(host), "check_mode": self.check_mode}
        tasks = [t for role in self.roles for t in render_role(role, host_vars, facts, djson, info)]
        return Plan(facts, decisions, djson, tasks)

    def _plan(self, plan: Plan, checks: dict[str, CheckResult], report: HostReport) -> list[Task]:
        planned = []
        for task in plan.tasks:
            name, role = task.spec.name, task.spec.role
            if not task.enabled:
                report.tasks.append(TaskReport(role, name, "skipped", task.skip_reason or "", id=task.id))
                continue
            if task.spec.type == "assert":
                continue  # judged on the last probe
            result = checks[task.id]
            if result.error:
                report.tasks.append(TaskReport(role, name, "failed", f"check failed: {result.error}", id=task.id))
            elif result.in_state:
                report.tasks.append(TaskReport(role, name, "ok", result.reason, id=task.id))
            else:
                why = result.reason + (f" ({task.why})" if task.why else "")
                report.tasks.append(TaskReport(role, name, "changed", why, _diff(task, result), id=task.id,
                                               why=task.why))
                planned.append(task)
        return planned

    def _apply(self, conn: Connection, host: Host, planned: list[Task], report: HostReport) -> None:
        by_id = {t.id: t for t in planned}
        parts = []
        for task in planned:
            body = (f"if ( {maybe_sudo(task.resource.check(), task, conn, check=True)}\n) >/dev/null 2>&1; "
                    f"then echo {_ALREADY}; exit 0; fi\n{maybe_sudo(task.resource.apply(), task, conn)}")
            parts.append(sections.section(f"apply.{task.id}", body, stop_on_failure=True))
        current = {"task": None, "done": set()}

        def on_line(line: str) -> None:
            if line.startswith("@@fleet:end apply."):
                current["done"].add(line[len("@@fleet:end apply."):].split(" ")[0])
            if line.startswith("@@fleet:begin apply."):
                task = by_id.get(line[len("@@fleet:begin apply."):-2])
                current["task"] = task
                if task:
                    self.progress(host.name, f"{task.spec.role}: {task.resource.describe()}")
            elif line.strip() and not line.startswith("@@fleet:") and current["task"] is not None:
                self.progress(host.name, f"  {line.strip()[:160]}")

        try:
            result = conn.run(hostlock.wrap("\n".join(parts), conn), on_output=on_line)
        except HostError as exc:
            _lost(report, by_id, current["task"], current["done"], exc)
            return
        held_by = hostlock.holder(result.stdout) if result.exit == hostlock.BUSY else None
        if held_by:
            raise HostError(f"{host.name}: another apply is running on this host ({held_by}); nothing was changed. "
                            "Wait for it to finish, then run again")
        found = sections.split_sections(result.stdout)
        for entry in report.tasks:
            if entry.id not in by_id:
                continue
            sec = found.get(f"apply.{entry.id}")
            if sec is None:
                entry.status, entry.reason = "failed", "not run: an earlier task failed"
            elif sec.rc != 0:
                entry.status = "failed"
                entry.reason = f"apply failed (exit {sec.rc}): {_tail(sec.output)}"
            elif _ALREADY in sec.output:
                entry.status, entry.reason, entry.diff = "ok", "in state when its turn came", None

    def _confirm(self, checks: dict[str, CheckResult], report: HostReport) -> None:
        """After applying, every changed task must now check in state: idempotence proved, not assumed."""
        for entry in report.tasks:
            if entry.status != "changed":
                continue
            result = checks.get(entry.id)
            if result is not None and not result.in_state:
                entry.status = "failed"
                entry.reason = f"applied, but the check still says: {result.reason}"

    def _finish(self, conn, host, plan: Plan, checks, report: HostReport) -> None:
        # Whatever the verify step answers or the host does with its file, the report and the record survive.
        try:
            verify = self._judge_asserts(plan, checks, report)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            verify = None
            report.error = (f"the verify result has a shape fleet cannot read ({type(exc).__name__}: {exc}); "
                            "check the verify role's assert output")
        facts = dict(plan.facts)
        if verify is not None:
            from .facts.record import with_last_verify

            facts["verify"] = verify
            facts["torch"] = with_last_verify(facts.get("torch"), verify)
            # Written whenever verify ran: the record carries the fingerprint and time the next probe compares.
            if self.verify_write and not self.check_mode:
                try:   # sudo=True: it wants root; the connection applies shell.needs_sudo
                    conn.write_file(VERIFY_PATH, json.dumps(verify, indent=1) + "\n", mode=0o644, sudo=True)
                except HostError as exc:
                    report.error = f"could not record the verify result on the host: {exc}"
        report.facts = facts
        self._record(host, facts)

    def _judge_asserts(self, plan: Plan, checks, report: HostReport) -> dict | None:
        verify = None
        providers = plan.decisions_json.get("missing_providers", {}) or {}
        for task in plan.tasks:
            if task.spec.type != "assert" or not task.enabled:
                continue
            result = checks[task.id]
            status = "ok" if result.in_state else "failed"
            reason = result.reason
            if result.data is not None:
                verify = verify_record(result.data, providers)
                reason = verify["summary"]
            if self.check_mode and not result.in_state:
                status, reason = "changed", f"would fail now: {reason}"
            report.tasks.append(TaskReport(task.spec.role, task.spec.name, status, reason, id=task.id))
        return verify

    def _record(self, host: Host, facts: dict) -> None:
        from .facts import store

        store.write(self.facts_dir, host.name, facts)

    def run_sections(self, conn: Connection, script: str, what: str) -> dict[str, sections.Section]:
        result = conn.run(script)
        found = sections.split_sections(result.stdout)
        if not found:
            raise HostError(f"{conn.host.name}: the {what} produced no output (exit {result.exit}): "
                            f"{_tail(result.stderr or result.stdout)}")
        return found


def _lost(report: HostReport, by_id: dict, task: Task | None, done: set, exc: HostError) -> None:
    """The connection dropped mid-apply: the host is unreachable, in the task it was running."""
    where = f"{task.spec.role}: {task.spec.name}" if task else "before its first task"
    report.unreachable = True
    report.error = f"unreachable: the connection was lost during {where} ({exc})"
    for entry in report.tasks:
        if entry.id in by_id and entry.id not in done:
            entry.status = "failed"
            entry.reason = ("connection lost during this task" if task is not None and entry.id == task.id
                            else "not run: the connection was lost")


def maybe_sudo(snippet: str, task: Task, conn: Connection, *, check: bool = False) -> str:
    """Wrap in sudo only where this task needs root and the user is not root (checks read as the user)."""
    wants_root = not check and (task.spec.sudo if task.spec.sudo is not None else task.resource.root)
    return shell.as_root(snippet, wants_root=wants_root, user_is_root=conn.is_root)


def _venv_of(task: Task) -> str:
    """The environment verify's python lives in (its bin/python's grandparent)."""
    return posixpath.dirname(posixpath.dirname(str(task.resource.p.get("python") or "/opt/fleet/venv/bin/python")))


def _is_verify(task: Task) -> bool:
    return task.spec.type == "assert" and bool(task.resource.p.get("json"))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _parse_check(task: Task, sec: sections.Section | None) -> CheckResult:
    if sec is None:
        return CheckResult(False, "check did not run", error="no answer from the check (connection lost?)")
    try:
        return task.resource.parse(sec.rc, sec.output)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:   # e.g. a verify result of another shape
        why = f"the answer has a shape fleet cannot read ({type(exc).__name__}: {exc})"
        return CheckResult(False, why, error=why)


def _diff(task: Task, result: CheckResult) -> str | None:
    want = getattr(task.resource, "wanted_text", None)
    if want is None:
        return None
    old = result.diff or ""
    new = want()
    path = task.resource.p.get("path", "")
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{path} (now)", f"{path} (after)")
    return "".join(lines) or None


def _tail(text: str, n: int = 8) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def verify_record(data: dict, providers: dict) -> dict:
    record = dict(data)
    missing = record.get("missing_libraries") or []
    record["missing_providers"] = {lib: providers.get(lib, "unknown") for lib in missing}
    failed = [c["name"] for c in record.get("checks", []) if not c.get("passed")]
    if record.get("passed"):
        record["summary"] = "verify passed: " + ", ".join(c["name"] for c in record.get("checks", []))
    else:
        # each failed check with its detail: "cuda_available_interactive: in an interactive shell: CUDA error 803
        # ... from /usr/local/cuda-13.0/compat/libcuda.so.580.95.05: ...; fix: ...", never a bare name
        extra = "; ".join(f"{lib} (provided by role {role})" for lib, role in record["missing_providers"].items())
        details = [f"{c['name']}: {c['detail']}" if c.get("detail") else c["name"]
                   for c in record.get("checks", []) if not c.get("passed")]
        record["summary"] = "verify failed: " + "; ".join(details) + (f"; missing {extra}" if extra else "")
    skipped = (record.get("perf") or {}).get("skipped")
    if skipped:
        record["summary"] += f" ({skipped})"
    record["at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return record


class _Clock:
    def __init__(self, phases: dict):
        self.phases = phases

    def __call__(self, name: str):
        return _Phase(self.phases, name)


class _Phase:
    def __init__(self, phases, name):
        self.phases, self.name = phases, name

    def __enter__(self):
        self.t = time.monotonic()

    def __exit__(self, *exc):
        self.phases[self.name] = round(self.phases.get(self.name, 0) + time.monotonic() - self.t, 3)


__all__ = ["Engine", "HostReport", "TaskReport", "FleetError"]
